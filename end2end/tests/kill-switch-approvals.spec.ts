import { Browser, expect, test } from '@playwright/test';
import { strictURL } from '../playwright.config';
import { jsEnabled, setSwitch, signIn, unique } from './helpers';

// The second console of the run requires a second admin's approval to turn safety off
// (docs/switches.md, "Approvals"); it shares the first one's tables.
test.use({ baseURL: strictURL });

/** A browser context of its own (a second person), as this project runs pages. */
async function person(browser: Browser) {
  const context = await browser.newContext({ baseURL: strictURL, javaScriptEnabled: jsEnabled() });
  return { context, page: await context.newPage() };
}

test.describe('kill switch approvals', () => {
  test('one admin asks to turn safe mode off, cannot approve it; a second admin approves; the history says who', async ({ browser, request }) => {
    await setSwitch(request, 'safe_mode', true);
    const asker = await person(browser);
    const approver = await person(browser);
    try {
      const a = asker.page;
      await signIn(a, 'admin', '/kill-switches');
      const card = a.getByTestId('switch-safe_mode');
      const reason = unique('e2e four eyes');
      await card.locator('summary').click();
      await card.getByLabel('Reason for turning safe mode off').fill(reason);
      await card.getByLabel(/I confirm/).check();
      await card.getByRole('button', { name: 'Turn safe mode off' }).click();
      if (jsEnabled()) {
        await expect(a.getByRole('status')).toContainText('Requested: Safe mode turns off once another admin approves');
      }
      // Nothing changed yet; the page counts the request and leads to it.
      await a.goto('/kill-switches');
      await expect(card.locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('ON');
      await expect(a.getByTestId('pending-approvals')).toContainText('Awaiting approval: 1');

      // The asker's own request can only be withdrawn.
      await a.getByTestId('pending-approvals').click();
      const mine = a.getByTestId('approval').filter({ hasText: reason });
      await expect(mine).toHaveCount(1);
      await expect(mine.getByLabel('Decision').locator('option')).toHaveText(['Withdraw']);

      // The second admin, in a browser of their own, finds it on the Overview and approves
      // it with a reason.
      const b = approver.page;
      await signIn(b, 'admin2', '/');
      await expect(b.getByTestId('pending-approvals')).toContainText('Awaiting approval: 1');
      await b.getByTestId('pending-approvals').click();
      const theirs = b.getByTestId('approval').filter({ hasText: reason });
      await theirs.getByLabel('Reason').fill('e2e: checked with the incident lead');
      await theirs.getByLabel('Decision').selectOption('approve');
      await theirs.getByRole('button', { name: 'Decide' }).click();
      if (jsEnabled()) {
        await expect(b.getByRole('status')).toContainText('Approved: Safe mode turns off');
      }
      await expect(b.getByTestId('approval').filter({ hasText: reason })).toHaveCount(0);

      await b.goto('/kill-switches');
      await expect(b.getByTestId('switch-safe_mode').locator('span', { hasText: /^(ON|OFF)$/ })).toHaveText('OFF');
      const newest = b.getByRole('table', { name: 'Change history' }).locator('tbody tr').first();
      await expect(newest).toContainText(reason);
      await expect(newest).toContainText('approved by');
      await expect(b.getByTestId('pending-approvals')).toHaveCount(0);
    } finally {
      await asker.context.close();
      await approver.context.close();
      // Turning safety on never waits.
      await setSwitch(request, 'safe_mode', true);
    }
  });
});
