import { APIRequestContext, expect, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { apiKey, jsEnabled, ready, setSwitch, signIn, unique, user } from './helpers';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });

/** An id of letters only (digits would look like a phone number and be masked). */
function letters(n: number): string {
  return randomBytes(n)
    .toString('hex')
    .replace(/[0-9]/g, (c) => 'ghijklmnop'[Number(c)]);
}

async function postEvent(request: APIRequestContext, conversation: string, message: string, text: string) {
  const res = await request.post('/api/v1/events', {
    headers: auth(),
    data: { conversation_id: conversation, message_id: message, created_at: new Date().toISOString(), channel: 'email', text },
  });
  expect(res.status(), await res.text()).toBe(200);
}

test.describe('forms', () => {
  test('a refusal that comes back in the address (a post without JavaScript) is shown, and stays once the page runs', async ({ page }) => {
    // The page comes from the server with the refusal; with JavaScript the page's code takes
    // it over from the page (it does not read the address itself) and shows the same.
    await setSwitch(page.request, 'automation_enabled', false);
    await signIn(page, 'admin', '/kill-switches');
    const form = page.getByTestId('switch-automation_enabled').locator('form');
    const action = (await form.getAttribute('action'))!;
    const fields = await form.evaluate((f: HTMLFormElement) =>
      Array.from(new FormData(f).entries()).map(([k, v]) => [k, String(v)] as [string, string]),
    );
    // Posted as a browser without JavaScript posts it: confirmed, with no reason.
    const res = await page.request.post(action, {
      form: { ...Object.fromEntries(fields), reason: '', confirm: 'yes' },
      headers: { Referer: page.url(), Accept: 'text/html,application/xhtml+xml' },
      maxRedirects: 0,
    });
    expect([302, 303], await res.text()).toContain(res.status());
    await page.goto(res.headers()['location']);
    await ready(page);
    await expect(page.getByRole('alert')).toContainText('A reason is required.');
    const reason = page.getByTestId('switch-automation_enabled').getByLabel(/^Reason for turning/);
    await expect(reason).toHaveAttribute('aria-invalid', 'true');
    if (jsEnabled()) await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  });

  test('after a kill-switch change the form is closed and its reason gone; flipping back starts empty', async ({ page, request }) => {
    // From on: off (with its confirmation), then on again.
    await setSwitch(request, 'safe_mode', true);
    await signIn(page, 'admin', '/kill-switches');
    const card = page.getByTestId('switch-safe_mode');
    const badge = card.locator('span', { hasText: /^(ON|OFF)$/ });
    await expect(badge).toHaveText('ON');
    for (const [verb, after] of [['off', 'OFF'], ['on', 'ON']] as const) {
      const reason = unique(`e2e reset ${verb}`);
      await card.locator('summary').click();
      const box = card.getByLabel(`Reason for turning safe mode ${verb}`);
      await expect(box).toHaveValue('');
      await box.fill(reason);
      if (verb === 'off') await card.getByLabel(/I confirm/).check();
      await card.getByRole('button', { name: `Turn safe mode ${verb}` }).click();
      await ready(page);
      await expect(badge).toHaveText(after);
      await expect(card.locator('details')).not.toHaveAttribute('open', '');
      await expect(card.locator('textarea')).toHaveValue('');
    }
  });

  test('after disabling and enabling a user the reason boxes are empty again', async ({ page }) => {
    await signIn(page, 'admin', '/users');
    // A user of its own: no other test signs in as it, whatever happens here.
    const spare = user('spare').name;
    const row = page.getByTestId(`user-${spare}`);
    const reason = row.getByLabel(`Reason to disable ${spare}`);
    await reason.fill(unique('e2e leave'));
    await row.getByRole('button', { name: 'Disable' }).click();
    await ready(page);
    await expect(row).toContainText('disabled');
    const again = row.getByLabel(`Reason to enable ${spare}`);
    await expect(again).toHaveValue('');
    await again.fill(unique('e2e back'));
    await row.getByRole('button', { name: 'Enable' }).click();
    await ready(page);
    await expect(row).toContainText('active');
    await expect(row.getByLabel(`Reason to disable ${spare}`)).toHaveValue('');
  });

  test('audit filters apply together, and an unknown action type says so', async ({ page, request }) => {
    const a = `e2e-a-${letters(4)}`;
    const b = `e2e-b-${letters(4)}`;
    await postEvent(request, a, `${a}-1`, 'I would like a refund please');
    await postEvent(request, b, `${b}-1`, 'I would like a refund please');
    await signIn(page, 'viewer', '/audit');
    await page.getByLabel('Conversation').fill(a);
    await page.getByLabel('Action type').selectOption('decision');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await ready(page);
    const rows = page.getByTestId('audit-row');
    await expect(rows).toHaveCount(1);
    await expect(rows.first().getByTestId('audit-action')).toHaveText('decision');
    await expect(rows.first()).toContainText(a);
    // The conversation stays chosen while the action type changes.
    await page.getByLabel('Action type').selectOption('route');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await ready(page);
    for (const action of await rows.getByTestId('audit-action').allTextContents()) expect(action).toBe('route');
    for (const text of await rows.allTextContents()) expect(text).toContain(a);
    await expect(rows).not.toHaveCount(0);

    await page.goto('/audit?action_type=nonsense');
    await ready(page);
    await expect(page.getByRole('alert')).toContainText('There is no action type "nonsense"');
  });
});
