import { expect, test } from '@playwright/test';
import { apiKey, jsEnabled, ready, setSwitch, signIn } from './helpers';

test.describe('kill switches without a person', () => {
  test('without JavaScript, making a trigger URL says it needs it and cannot be sent', async ({ page }) => {
    test.skip(jsEnabled(), 'the no-JavaScript page only');
    await signIn(page, 'admin', '/kill-switches/automation');
    const row = page.getByTestId('trigger-safe_mode');
    await expect(row.getByRole('button', { name: /(Make|Rotate) the safe mode trigger URL/ })).toBeDisabled();
    await expect(row.getByTestId('needs-js')).toHaveText('This needs JavaScript: what it makes is shown once, on this page.');
  });

  test('an admin makes a trigger URL, sees it once; a monitor calling it turns safe mode on; revoked, it changes nothing', async ({ page, request }) => {
    test.skip(!jsEnabled(), 'a secret is shown by the page\'s code only (see the test above)');
    await setSwitch(request, 'safe_mode', false);
    await signIn(page, 'admin', '/kill-switches/automation');
    const row = page.getByTestId('trigger-safe_mode');
    await row.getByRole('button', { name: /(Make|Rotate) the safe mode trigger URL/ }).click();
    const secret = page.getByTestId('one-time-secret');
    await expect(secret).toContainText('/api/v1/kill-switches/triggers/kst_');
    const url = (await secret.innerText()).trim();
    const path = url.slice(url.indexOf('/api/v1/'));
    await expect(row).toContainText('made by');
    // A reload shows who made it, never the URL again.
    await page.reload();
    await ready(page);
    await expect(page.getByTestId('one-time-secret')).toHaveCount(0);
    expect(await page.locator('body').innerText()).not.toContain(path.split('/').pop()!);

    // Alertmanager posts its payload: safe mode turns on, once.
    const payload = { status: 'firing', commonLabels: { alertname: 'HighErrorRate' }, alerts: [] };
    const first = await request.post(path, { data: payload });
    expect(first.status(), await first.text()).toBe(200);
    expect((await first.json()).changed).toBe(true);
    const again = await request.post(path, { data: payload });
    expect((await again.json()).changed).toBe(false);
    await page.goto('/events');
    await ready(page);
    await expect(page.getByTestId('switch-banner').locator('li', { hasText: 'Safe mode is off' })).toHaveCount(0);

    // Revoked: a call is a 401 and changes nothing.
    await page.goto('/kill-switches/automation');
    await ready(page);
    await page.getByTestId('trigger-safe_mode').getByRole('button', { name: 'Revoke the safe mode trigger URL' }).click();
    await expect(page.getByText('trigger URL is revoked')).toBeVisible();
    await setSwitch(request, 'safe_mode', false);
    const revoked = await request.post(path, { data: payload });
    expect(revoked.status()).toBe(401);
    const now = await request.get('/api/v1/kill-switches', { headers: { Authorization: `Bearer ${apiKey()}` } });
    expect((await now.json()).safe_mode).toBe(false);
  });

  test('an admin attaches a trip to an alert rule and removes it; a viewer sees it without the forms', async ({ browser, page }) => {
    await signIn(page, 'admin', '/kill-switches/automation');
    const form = page.locator('form', { has: page.getByLabel('When this rule fires') });
    await form.getByLabel('When this rule fires').selectOption('outbox.receiver_failing');
    await form.getByLabel('Then').selectOption('automation_enabled');
    await form.getByRole('button', { name: 'Attach the trip' }).click();
    // The answer in words is the page's code's; without it the page comes back with the row.
    if (jsEnabled()) await expect(page.getByText('When outbox.receiver_failing fires, automation turns off.')).toBeVisible();
    const trip = page.getByTestId('trip').filter({ hasText: 'outbox.receiver_failing' }).filter({ hasText: 'automation turns off' });
    await expect(trip).toHaveCount(1);

    const viewer = await browser.newContext({ javaScriptEnabled: jsEnabled() });
    try {
      const other = await viewer.newPage();
      await signIn(other, 'viewer', '/kill-switches/automation');
      await expect(other.getByTestId('trip').filter({ hasText: 'outbox.receiver_failing' })).toHaveCount(1);
      await expect(other.getByRole('button', { name: 'Attach the trip' })).toHaveCount(0);
      await expect(other.getByRole('button', { name: 'Remove' })).toHaveCount(0);
      await expect(other.getByTestId('trigger-safe_mode')).toHaveCount(0);
    } finally {
      await viewer.close();
    }

    await trip.getByRole('button', { name: 'Remove' }).click();
    if (jsEnabled()) await expect(page.getByText('Automation: the trip on outbox.receiver_failing is removed.')).toBeVisible();
    await expect(page.getByTestId('trip').filter({ hasText: 'outbox.receiver_failing' })).toHaveCount(0);
  });
});
