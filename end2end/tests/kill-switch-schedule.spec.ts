import { expect, test } from '@playwright/test';
import { setSwitch, signIn, unique } from './helpers';

test.describe('scheduled kill-switch changes', () => {
  test('an admin sets a change for later, sees it with its time and author, and cancels it with a reason', async ({ page, request }) => {
    await setSwitch(request, 'safe_mode', true);
    const admin = await signIn(page, 'admin', '/kill-switches');
    const card = page.getByTestId('switch-safe_mode');
    const reason = unique('e2e scheduled');
    // Tomorrow at this hour, in UTC, as the input takes it.
    const at = new Date(Date.now() + 24 * 3600_000).toISOString().slice(0, 16);
    await card.locator('summary').click();
    await card.getByLabel('Reason for turning safe mode off').fill(reason);
    await card.getByLabel('At (UTC; empty: now)').fill(at);
    await card.getByLabel(/I confirm/).check();
    await card.getByRole('button', { name: 'Turn safe mode off' }).click();
    await expect(page.getByTestId('scheduled-changes')).toContainText('Scheduled:');
    // The Overview counts it too, and leads to it.
    await page.goto('/');
    await page.getByTestId('scheduled-changes').click();
    const row = page.getByTestId('scheduled').filter({ hasText: reason });
    await expect(row).toContainText(`by ${admin.name}`);
    await expect(row).toContainText('Safe mode off at');
    await row.getByLabel('Reason').fill('e2e: plans changed');
    await row.getByRole('button', { name: 'Cancel' }).click();
    await expect(page.getByTestId('scheduled').filter({ hasText: reason })).toHaveCount(0);
    // Nothing changed; the history says it was cancelled.
    await page.goto('/kill-switches');
    await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('ON');
    const newest = page.getByRole('table', { name: 'Change history' }).locator('tbody tr').first();
    await expect(newest).toContainText('Cancelled: Safe mode to turn off at');
  });
});
