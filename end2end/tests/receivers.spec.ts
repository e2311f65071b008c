import { APIRequestContext, expect, Page, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { apiKey, ready, setSwitch, signIn } from './helpers';
import { conversationId, saveReceiver, startReceiver } from './receiver';

/** Opens the receivers' admin forms if they are closed (each change reads the page again). */
async function openRoutes(page: Page) {
  const forms = page.locator('details', { has: page.getByLabel('Address') });
  if ((await forms.getAttribute('open')) === null) await forms.locator('summary').click();
}

/** Routes `type` to the receiver `to` on the Receiver page. */
async function route(page: Page, type: string, to: string) {
  await openRoutes(page);
  await page.getByLabel('Kind').selectOption(type);
  await page.getByLabel('Goes to').selectOption(to);
  await page.getByRole('button', { name: 'Save route' }).click();
  await ready(page);
  await expect(page.getByTestId('routes')).toContainText(`${type} → ${to}`);
}

/** Posts a message that decides a tag among its side effects; how many tags it queued. */
async function postRefund(request: APIRequestContext, conversation: string) {
  const res = await request.post('/api/v1/events', {
    headers: { Authorization: `Bearer ${apiKey()}` },
    data: { conversation_id: conversation, message_id: 'm-1', created_at: new Date().toISOString(), channel: 'email', text: 'Where is my order? It is late and I want a refund' },
  });
  expect(res.status(), await res.text()).toBe(200);
  const body = await res.json();
  return (body.actions as { key: string; result: string }[]).filter((a) => a.key.startsWith('act:rp_tag:') && a.result === 'queued').length;
}

test.describe('receivers', () => {
  test('an admin adds a receiver and routes tags to it: tags go there, every other side effect to default', async ({ page, request }) => {
    const main = await startReceiver();
    const crm = await startReceiver();
    const name = `crm-${randomBytes(3).toString('hex')}`;
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, main.url);
      await openRoutes(page);
      await page.getByLabel('Name').fill(name);
      await page.getByLabel('Address').fill(crm.url);
      await page.getByRole('button', { name: 'Add receiver' }).click();
      await expect(page.getByLabel('Open receiver').locator(`option[value="${name}"]`)).toHaveCount(1);
      await route(page, 'tag', name);

      const conversation = conversationId();
      await postRefund(request, conversation);
      const ours = (ids: string[]) => ids.filter((id) => id.includes(conversation));
      await expect.poll(() => ours(crm.state.accepted).length, { timeout: 30_000 }).toBeGreaterThan(0);
      await expect.poll(() => ours(main.state.accepted).length, { timeout: 30_000 }).toBeGreaterThan(0);
      expect(ours(crm.state.accepted).every((id) => id.startsWith('act:rp_tag:'))).toBe(true);
      expect(ours(main.state.accepted).some((id) => id.startsWith('act:rp_tag:'))).toBe(false);

      // Its own page: its status, its URL, its own forms.
      await page.getByLabel('Open receiver').selectOption(name);
      await page.getByRole('button', { name: 'Open', exact: true }).click();
      await ready(page);
      await expect(page.getByRole('heading', { name, exact: true })).toBeVisible();
      await expect(page.getByTestId('receiver-status')).toHaveText(`Delivering to ${crm.url}`);

      // Paused on its page, its tags wait; its card on the Outbox says so and how many.
      const pause = page.getByTestId('pause-form');
      const submit = async (button: string, reason: string) => {
        await pause.locator('summary').click();
        await pause.getByLabel('Reason').fill(reason);
        await pause.getByRole('button', { name: button }).click();
        await ready(page);
      };
      await submit('Pause deliveries', 'e2e: crm maintenance');
      await expect(page.getByTestId('receiver-waits')).toContainText('Paused by');
      const later = conversationId();
      const tags = await postRefund(request, later);
      expect(tags).toBeGreaterThan(0);
      await page.goto('/outbox');
      await ready(page);
      const card = page.locator(`[data-receiver="${name}"]`);
      await expect(card.getByTestId('receiver-waits')).toContainText('Paused by');
      await expect(card.getByTestId('receiver-queue')).toHaveText(tags === 1 ? '1 side effect waits.' : `${tags} side effects wait.`);
      expect(crm.state.accepted.filter((id) => id.includes(later))).toEqual([]);
      // Its name leads to its page, which resumes it: the tags go, and nothing waits.
      await card.getByRole('link', { name, exact: true }).click();
      await ready(page);
      await submit('Resume deliveries', 'e2e: crm back');
      await expect.poll(() => crm.state.accepted.filter((id) => id.includes(later)).length, { timeout: 30_000 }).toBe(tags);
      await expect
        .poll(async () => {
          await page.goto('/outbox');
          return card.getByTestId('receiver-queue').innerText();
        }, { timeout: 30_000 })
        .toBe('Nothing waits for it.');
    } finally {
      // Tags back to default, for the tests after this one.
      await page.goto('/outbox/receiver');
      await ready(page);
      await route(page, 'tag', 'default');
      main.close();
      crm.close();
    }
  });
});
