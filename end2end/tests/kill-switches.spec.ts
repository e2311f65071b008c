import { expect, Page, test } from '@playwright/test';
import { jsEnabled, MOMENT, ready, setSwitch, signIn, unique } from './helpers';

/** Flips safe mode through its card on the Kill switches page, with a reason (and the
 * confirmation turning it off asks for), and waits for the card to show it. */
async function flipSafeMode(page: Page, verb: 'on' | 'off', reason: string) {
  const card = page.getByTestId('switch-safe_mode');
  await card.locator('summary').click();
  await card.getByLabel(`Reason for turning safe mode ${verb}`).fill(reason);
  if (verb === 'off') await card.getByLabel(/I confirm/).check();
  await card.getByRole('button', { name: `Turn safe mode ${verb}` }).click();
  await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText(verb === 'off' ? 'OFF' : 'ON');
}

test.describe('kill switches', () => {
  test('while safe mode is off every page says so, with who, when and why; back on, it is gone', async ({ page, request }) => {
    await setSwitch(request, 'safe_mode', true);
    await setSwitch(request, 'automation_enabled', false);
    const admin = await signIn(page, 'admin', '/kill-switches');
    const flip = (verb: 'on' | 'off', reason: string) => flipSafeMode(page, verb, reason);
    const reason = unique('e2e banner');
    await flip('off', reason);
    for (const path of ['/events', '/audit', '/users']) {
      await page.goto(path);
      await ready(page);
      const banner = page.getByTestId('switch-banner');
      await expect(banner).toContainText('Safe mode is off');
      await expect(banner).toContainText(admin.name);
      await expect(banner).toContainText(reason);
      await expect(banner).toContainText(MOMENT);
    }
    await page.goto('/kill-switches');
    await ready(page);
    await flip('on', unique('e2e banner done'));
    await page.goto('/events');
    await ready(page);
    await expect(page.getByTestId('switch-banner').filter({ hasText: 'Safe mode is off' })).toHaveCount(0);
  });

  test('the banner follows a change at once, without a reload, and in a second tab within seconds', async ({ page, request }) => {
    test.skip(!jsEnabled(), 'without JavaScript every change is a new page, and an open page does not change');
    await setSwitch(request, 'safe_mode', true);
    await setSwitch(request, 'automation_enabled', false);
    await signIn(page, 'admin', '/kill-switches');
    const other = await page.context().newPage();
    try {
      await other.goto('/events');
      await ready(other);
      const banner = (p: typeof page) => p.getByTestId('switch-banner').filter({ hasText: 'Safe mode is off' });
      await expect(banner(page)).toHaveCount(0);
      await expect(banner(other)).toHaveCount(0);
      const flip = (verb: 'on' | 'off', reason: string) => flipSafeMode(page, verb, reason);
      const reason = unique('e2e live banner');
      await flip('off', reason);
      // This tab: with the change, not at a reload.
      await expect(banner(page)).toContainText(reason, { timeout: 5_000 });
      // The other tab (no reload, no navigation): at its next read of the switches.
      await expect(banner(other)).toContainText(reason, { timeout: 20_000 });
      await flip('on', unique('e2e live banner done'));
      await expect(banner(page)).toHaveCount(0, { timeout: 5_000 });
      await expect(banner(other)).toHaveCount(0, { timeout: 20_000 });
    } finally {
      await other.close();
    }
  });

  test('an admin turns safe mode off with a reason; the change and its history survive a reload', async ({ page, request }) => {
    // From on: the risky direction, with its confirmation.
    await setSwitch(request, 'safe_mode', true);
    const admin = await signIn(page, 'admin', '/kill-switches');
    const card = page.getByTestId('switch-safe_mode');
    await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('ON');
    const reason = unique('e2e flip');

    await card.locator('summary').click();
    await card.getByLabel('Reason for turning safe mode off').fill(reason);
    await card.getByLabel(/I confirm/).check();
    await card.getByRole('button', { name: 'Turn safe mode off' }).click();

    await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('OFF');
    const newest = page.getByRole('table', { name: 'Change history' }).locator('tbody tr').first();
    await expect(newest).toContainText(reason);
    await expect(newest).toContainText(admin.name);

    await page.reload();
    await ready(page);
    await expect(page.getByTestId('switch-safe_mode').locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('OFF');
    await expect(page.getByRole('table', { name: 'Change history' }).locator('tbody tr').first()).toContainText(reason);
    await expect(page.getByTestId('switch-safe_mode').getByTestId('last-change')).toContainText(admin.name);
  });

  test('an empty reason shows an error and changes nothing', async ({ page, request }) => {
    // From off: turning automation on asks for a reason and a confirmation.
    await setSwitch(request, 'automation_enabled', false);
    await signIn(page, 'admin', '/kill-switches');
    const card = page.getByTestId('switch-automation_enabled');
    const badge = card.locator('span', { hasText: /^(ON|OFF)$/ });
    await expect(badge).toHaveText('OFF');
    const history = page.getByRole('table', { name: 'Change history' }).locator('tbody tr').first();
    const newestBefore = (await history.count()) ? await history.innerText() : '';

    await card.locator('summary').click();
    await card.getByLabel(/I confirm/).check();
    await card.getByRole('button', { name: 'Turn automation on' }).click();

    await expect(page.getByRole('alert')).toContainText('A reason is required.');
    // The error is also on the field itself, for a screen reader and at a glance.
    const reason = card.getByLabel(/^Reason for turning/);
    await expect(reason).toHaveAttribute('aria-invalid', 'true');
    await expect(reason).toHaveAccessibleDescription('A reason is required.');
    if (jsEnabled()) {
      // Another refusal, with a reason typed: the form stays open, the error is at its
      // field and what was typed is still there.
      await reason.fill('e2e: typed and kept');
      await card.getByLabel(/I confirm/).uncheck();
      await card.getByRole('button', { name: 'Turn automation on' }).click();
      const confirm = card.getByLabel(/I confirm/);
      await expect(confirm).toHaveAttribute('aria-invalid', 'true');
      await expect(confirm).toBeVisible();
      await expect(reason).toHaveValue('e2e: typed and kept');
    }
    await expect(page.getByTestId('switch-automation_enabled').locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('OFF');
    await page.goto('/kill-switches');
    await ready(page);
    await expect(page.getByTestId('switch-automation_enabled').locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('OFF');
    const newestAfter = (await history.count()) ? await history.innerText() : '';
    expect(newestAfter).toBe(newestBefore);
  });

  test('the cards on the Kill switches page and the Overview follow a change someone else made, without a reload', async ({ page, request }) => {
    test.skip(!jsEnabled(), 'without JavaScript an open page does not change');
    await setSwitch(request, 'safe_mode', true);
    await signIn(page, 'admin', '/kill-switches');
    const badge = page.getByTestId('switch-safe_mode').locator('span', { hasText: /^(ON|OFF)$/ });
    await expect(badge).toHaveText('ON');
    const overview = await page.context().newPage();
    try {
      await overview.goto('/');
      await ready(overview);
      const pill = overview.getByTestId('overview-switch-safe_mode');
      await expect(pill).toContainText('ON');
      // Another admin turns it off (through the API): no reload, no navigation here.
      await setSwitch(request, 'safe_mode', false);
      await expect(badge).toHaveText('OFF', { timeout: 20_000 });
      await expect(page.getByTestId('switch-safe_mode').getByTestId('last-change')).toContainText('safe_mode off to start from');
      await expect(pill).toContainText('OFF', { timeout: 20_000 });
    } finally {
      await overview.close();
      await setSwitch(request, 'safe_mode', true);
    }
  });

  test('refused after someone else turned it the same way, the reason typed is not left in the form for the other way', async ({ page, request }) => {
    test.skip(!jsEnabled(), 'without JavaScript a refusal is a new page, with empty forms');
    await setSwitch(request, 'safe_mode', false);
    await signIn(page, 'admin', '/kill-switches');
    const card = page.getByTestId('switch-safe_mode');
    const badge = card.locator('span', { hasText: /^(ON|OFF)$/ });
    await expect(badge).toHaveText('OFF');
    await card.locator('summary').click();
    const typed = unique('e2e seeing failures, turning safe mode on');
    await card.getByLabel('Reason for turning safe mode on').fill(typed);
    // Meanwhile another admin turns it on. The frame's read of the switches (every 5 s)
    // would show this card the change before the click: it waits until the refusal.
    const frameRead = '**/api/load_shell_info*';
    await page.route(frameRead, (route) => route.abort());
    await setSwitch(request, 'safe_mode', true);
    await card.getByRole('button', { name: 'Turn safe mode on' }).click();
    await expect(page.getByRole('alert')).toContainText('Changed by someone else');
    await page.unroute(frameRead);
    await expect(badge).toHaveText('ON');
    // The card offers the other way now: a new form, closed and empty.
    const off = card.getByLabel('Reason for turning safe mode off');
    await expect(off).toBeHidden();
    await card.locator('summary').click();
    await expect(off).toHaveValue('');
    await expect(card.getByText(typed)).toHaveCount(0);
  });

  test('a double-clicked submit changes the switch once and writes one history entry', async ({ page, request }) => {
    await setSwitch(request, 'automation_enabled', false);
    await signIn(page, 'admin', '/kill-switches');
    const card = page.getByTestId('switch-automation_enabled');
    await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('OFF');
    const reason = unique('e2e double click');

    await card.locator('summary').click();
    await card.getByLabel('Reason for turning automation on').fill(reason);
    await card.getByLabel(/I confirm/).check();
    await card.getByRole('button', { name: 'Turn automation on' }).dblclick();

    await expect(page.getByTestId('switch-automation_enabled').locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('ON');
    await page.goto('/kill-switches');
    await ready(page);
    const rows = page.getByRole('table', { name: 'Change history' }).locator('tbody tr', { hasText: reason });
    await expect(rows).toHaveCount(1);
  });
});
