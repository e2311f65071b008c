import { expect, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { jsEnabled, ready, signIn } from './helpers';

test.describe('users and API keys', () => {
  test('without JavaScript, the forms that make a secret say they need it and cannot be sent', async ({ page }) => {
    test.skip(jsEnabled(), 'the no-JavaScript page only');
    await signIn(page, 'admin', '/users');
    await page.getByText('Add a user…').click();
    await expect(page.getByRole('button', { name: 'Add user' })).toBeDisabled();
    await expect(page.getByTestId('needs-js').first()).toHaveText('This needs JavaScript: what it makes is shown once, on this page.');
    await page.goto('/api-keys');
    await page.getByText('Create an API key…').click();
    await expect(page.getByRole('button', { name: 'Create key' })).toBeDisabled();
    await expect(page.getByTestId('needs-js').first()).toHaveText('This needs JavaScript: what it makes is shown once, on this page.');
  });

  test('an admin adds a user with a one-time password, who signs in with it; a reset gives another', async ({ page, browser }) => {
    test.skip(!jsEnabled(), 'a secret is shown by the page\'s code only (see the test above)');
    const name = `sam-${randomBytes(3).toString('hex')}`;
    await signIn(page, 'admin', '/users');
    await page.getByText('Add a user…').click();
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Role', { exact: true }).selectOption('operator');
    await page.getByRole('button', { name: 'Add user' }).click();
    await ready(page);
    await expect(page.getByRole('status').filter({ hasText: `${name} was added as operator.` })).toBeVisible();
    const password = (await page.getByRole('status').filter({ hasText: 'was added' }).getByTestId('one-time-secret').innerText()).trim();
    expect(password.length).toBeGreaterThanOrEqual(12);
    await expect(page.getByTestId(`user-${name}`)).toContainText('operator');

    const other = await browser.newPage();
    await other.goto('/login');
    await other.getByLabel('User name').fill(name);
    await other.getByLabel('Password').fill(password);
    await other.getByRole('button', { name: 'Sign in' }).click();
    await expect(other.getByTestId('signed-in-as')).toContainText(name);

    // A reset: a new one-time password; the old one no longer works.
    const row = page.getByTestId(`user-${name}`);
    await row.getByText('Reset password…').click();
    await row.getByLabel(`Reason to reset ${name}'s password`).fill('lost it');
    await row.getByRole('button', { name: 'Reset password' }).click();
    await ready(page);
    await expect(page.getByRole('status').filter({ hasText: `${name} has a new password` })).toBeVisible();
    const second = (await page.getByRole('status').filter({ hasText: 'has a new password' }).getByTestId('one-time-secret').innerText()).trim();
    expect(second).not.toBe(password);
    await other.context().clearCookies();
    await other.goto('/login');
    await other.getByLabel('User name').fill(name);
    await other.getByLabel('Password').fill(password);
    await other.getByRole('button', { name: 'Sign in' }).click();
    await expect(other.getByRole('alert')).toBeVisible();
    await other.close();
  });

  test('an admin creates a scoped key (shown once), sees when it was last used, and revokes it', async ({ page, request }) => {
    test.skip(!jsEnabled(), 'a secret is shown by the page\'s code only (see the test above)');
    const name = `bot-${randomBytes(3).toString('hex')}`;
    await signIn(page, 'admin', '/api-keys');
    await page.getByText('Create an API key…').click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await ready(page);
    // No name: said, and next to the field.
    await expect(page.getByRole('alert')).toContainText('A key name is 2 to 64 characters');
    await expect(page.getByLabel('Name (the client it is for)')).toHaveAttribute('aria-invalid', 'true');
    if (!(await page.getByLabel('Name (the client it is for)').isVisible())) await page.getByText('Create an API key…').click();
    await page.getByLabel('Name (the client it is for)').fill(name);
    await page.getByLabel('switches:read').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await ready(page);
    await expect(page.getByRole('status').filter({ hasText: `API key ${name} was created (switches:read).` })).toBeVisible();
    const key = (await page.getByTestId('one-time-secret').innerText()).trim();
    const row = page.getByTestId(`key-${name}`);
    await expect(row.getByTestId('last-used')).toHaveText('never');

    const auth = { Authorization: `Bearer ${key}` };
    expect((await request.get('/api/v1/kill-switches', { headers: auth })).status()).toBe(200);
    // Its scope is all it may do.
    const lookup = '/api/v1/conversations/lookup?channel=sms&company_number=%2B447700900101&recipient=%2B447700900102';
    expect((await request.get(lookup, { headers: auth })).status()).toBe(403);

    await page.reload();
    await ready(page);
    await expect(row.getByTestId('last-used').locator('time')).toHaveCount(1);

    await row.getByText('Revoke…').click();
    await row.getByLabel(`Reason to revoke ${name}`).fill('client retired');
    await row.getByLabel(`Clients using ${name} stop working now`).check();
    await row.getByRole('button', { name: 'Revoke key' }).click();
    await ready(page);
    await expect(page.getByRole('status').filter({ hasText: 'The API key is revoked' })).toBeVisible();
    await expect(row).toContainText('revoked');
    await expect(row.getByRole('button', { name: 'Revoke key' })).toHaveCount(0);
    expect((await request.get('/api/v1/kill-switches', { headers: auth })).status()).toBe(401);

    await page.goto('/audit?action_type=api_key_revoked');
    await ready(page);
    await expect(page.getByTestId('audit-summary').filter({ hasText: `API key ${name} revoked: “client retired”` })).toHaveCount(1);
  });
});
