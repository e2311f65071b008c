import { randomBytes } from 'node:crypto';
import { expect, Page, test } from '@playwright/test';
import { apiKey, jsEnabled, MOMENT, ready, setSwitch, signIn, unique } from './helpers';

/** The banner's line about safe mode being off, on the page as it is now. */
const offLine = (page: Page) => page.getByTestId('switch-banner').locator('li', { hasText: 'Safe mode is off' });

test.describe('timed kill-switch changes', () => {
  test('a timed change says when it ends on its card and every page, and a change by hand voids it, saying so', async ({ page, request }) => {
    await setSwitch(request, 'safe_mode', true);
    await signIn(page, 'admin', '/kill-switches');
    const card = page.getByTestId('switch-safe_mode');
    await card.locator('summary').click();
    await card.getByLabel('Reason for turning safe mode off').fill(unique('e2e timed'));
    await card.getByLabel('How long').selectOption({ label: 'for 30 minutes' });
    await card.getByLabel(/I confirm/).check();
    await card.getByRole('button', { name: 'Turn safe mode off' }).click();
    await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('OFF');
    await expect(card.getByTestId('ends-at')).toContainText('Goes back by itself at');
    await expect(card.getByTestId('ends-at')).toContainText(MOMENT);
    for (const path of ['/events', '/outbox']) {
      await page.goto(path);
      await ready(page);
      const ends = offLine(page).getByTestId('switch-ends');
      await expect(ends).toContainText(MOMENT);
      await expect(ends).toContainText(/\((29|30) min left\)/);
    }
    // Back on by hand before the end: the timer is void, and the history says so.
    await page.goto('/kill-switches');
    await ready(page);
    await card.locator('summary').click();
    await card.getByLabel('Reason for turning safe mode on').fill(unique('e2e timed, done early'));
    await card.getByRole('button', { name: 'Turn safe mode on' }).click();
    await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('ON');
    await expect(card.getByTestId('ends-at')).toHaveCount(0);
    const newest = page.getByRole('table', { name: 'Change history' }).locator('tbody tr').first();
    await expect(newest).toContainText('will not revert');
  });

  test('a one-minute change counts down and goes back by itself; the history says the system did it', async ({ page, request }) => {
    test.setTimeout(180_000);
    await setSwitch(request, 'safe_mode', true);
    const auth = { Authorization: `Bearer ${apiKey()}` };
    const current = await (await request.get('/api/v1/kill-switches', { headers: auth })).json();
    const reason = unique('e2e one minute');
    const res = await request.post('/api/v1/kill-switches', {
      headers: { ...auth, 'Idempotency-Key': randomBytes(8).toString('hex') },
      data: { switch: 'safe_mode', enable: false, expected_version: current.version, reason, confirm: true, for_minutes: 1 },
    });
    expect(res.status(), await res.text()).toBe(200);
    expect((await res.json()).safe_mode_ends_at).toBeTruthy();
    await signIn(page, 'viewer', '/events');
    await ready(page);
    await expect(offLine(page)).toContainText(reason);
    await expect(offLine(page).getByTestId('switch-ends')).toContainText(/\((1 min|under a minute) left\)/);
    // Hydrated, the banner reads the switches again every 5 s; without JavaScript, a reader
    // reloads. Either way the line goes once a console has ended the change.
    await expect
      .poll(
        async () => {
          if (!jsEnabled()) {
            await page.reload();
          }
          return offLine(page).count();
        },
        { timeout: 120_000, intervals: [2_000] },
      )
      .toBe(0);
    await page.goto('/kill-switches');
    await ready(page);
    const newest = page.getByRole('table', { name: 'Change history' }).locator('tbody tr').first();
    await expect(newest).toContainText('system');
    await expect(newest).toContainText('reverted: the change by');
    await expect(page.getByTestId('switch-safe_mode').locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('ON');
  });
});
