import { expect, test } from '@playwright/test';
import { jsEnabled, ready, setSwitch, signIn } from './helpers';

/** Hydrated, in New York: the reader's zone, to the second, with the zone's name. */
const NEW_YORK = /^[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2}:\d{2}\s[AP]M E[SD]T$/;
/** Without JavaScript: the server's text, in UTC and saying so. */
const SERVER_UTC = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/;

test.describe('one clock', () => {
  test.use({ timezoneId: 'America/New_York' });

  test('a New York browser reads every moment in one format with its zone, the exact UTC time on hover', async ({ page, request }) => {
    // A change of each direction: the banner, the history and the audit all have a moment.
    await setSwitch(request, 'safe_mode', true);
    await setSwitch(request, 'safe_mode', false);
    await signIn(page, 'viewer', '/kill-switches');
    const format = jsEnabled() ? NEW_YORK : SERVER_UTC;
    for (const path of ['/kill-switches', '/audit', '/']) {
      await page.goto(path);
      await ready(page);
      const times = page.locator('time');
      await expect(times.first()).toBeVisible();
      await expect
        .poll(async () => (await times.allInnerTexts()).filter((t) => !format.test(t.trim())), { timeout: 10_000 })
        .toEqual([]);
      // The exact moment, in UTC, on hover.
      expect(await times.first().getAttribute('title')).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$/);
      // No raw timestamp anywhere on the page.
      expect(await page.locator('body').innerText()).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);
    }
    await setSwitch(request, 'safe_mode', true);
  });

  test('the Audit filter asks for a day in the reader\'s zone: a New York day reads as New York\'s', async ({ page, request }) => {
    await setSwitch(request, 'safe_mode', false);
    await setSwitch(request, 'safe_mode', true);
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/New_York' }).format(new Date());
    await signIn(page, 'viewer', '/audit');
    await page.getByLabel('Day', { exact: true }).fill(today);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.waitForURL(/\/audit\?.*day=/);
    await ready(page);
    // With JavaScript the browser says its offset on that day (New York's: UTC−05:00 in
    // winter, UTC−04:00 in summer); without, the page reads the day in UTC and says so.
    const [y, m, d] = today.split('-').map(Number);
    const named = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', timeZoneName: 'longOffset' })
      .formatToParts(new Date(Date.UTC(y, m - 1, d, 17)))
      .find((p) => p.type === 'timeZoneName')!.value; // "GMT-05:00"
    const [, sign, hh, mm] = /^GMT([+-])(\d{2}):(\d{2})$/.exec(named)!;
    const minutes = (sign === '-' ? -1 : 1) * (Number(hh) * 60 + Number(mm));
    const zone = jsEnabled() ? `UTC${sign === '-' ? '−' : '+'}${hh}:${mm}` : 'UTC';
    expect(new URL(page.url()).searchParams.get('tz') ?? '').toBe(jsEnabled() ? String(minutes) : '');
    await expect(page.getByTestId('audit-window')).toHaveText(`Records of ${today}, 00:00–23:59, ${zone}.`);
    // The change just made is a record of New York's today (in UTC it may be another day).
    if (jsEnabled()) await expect(page.getByTestId('audit-row').first()).toBeVisible();
  });
});
