import { expect, test } from '@playwright/test';
import { signIn, user } from './helpers';

test.describe('access', () => {
  test('a viewer sees the switches but no controls, and cannot open Users or API keys', async ({ page }) => {
    await signIn(page, 'viewer', '/kill-switches');
    await expect(page.getByTestId('switch-safe_mode').locator('span', { hasText: /^(ON|OFF)$/ })).toBeVisible();
    await expect(page.getByRole('button', { name: /^Turn / })).toHaveCount(0);
    await expect(page.getByText('Only admins can change the kill switches.')).toBeVisible();
    await expect(page.getByRole('link', { name: 'Users' })).toHaveCount(0);
    const res = await page.goto('/users');
    expect(res?.status()).toBe(403);
    await expect(page.getByRole('heading', { name: 'Not allowed' })).toBeVisible();
    // The refusal is said once, with what to do instead.
    await expect(page.getByTestId('not-allowed')).toHaveCount(1);
    const refusal = await page.getByTestId('not-allowed').innerText();
    expect(refusal.match(/role does not/gi)).toHaveLength(1);
    expect(refusal).toContain('Ask an admin if you need it.');
    // Inside the console's frame, with the way back.
    await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
    await expect(page.getByTestId('not-allowed').getByRole('link', { name: 'Back to the overview' })).toBeVisible();
    await expect(page.getByRole('table', { name: 'Users' })).toHaveCount(0);
    await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' })).toHaveCount(0);
    expect((await page.goto('/api-keys'))?.status()).toBe(403);
    await expect(page.getByRole('table', { name: 'API keys' })).toHaveCount(0);
  });

  test('a page that does not exist answers 404 inside the console, with the way back', async ({ page }) => {
    await signIn(page, 'viewer', '/');
    const res = await page.goto('/no-such-page');
    expect(res?.status()).toBe(404);
    await expect(page.getByRole('heading', { name: 'Page not found' })).toBeVisible();
    await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
    await expect(page.getByTestId('not-found')).toContainText('/no-such-page');
    await page.getByRole('link', { name: 'Back to the overview' }).click();
    await expect(page).toHaveURL(/\/$/);
  });

  test('a wrong password keeps you out; signing out and going back shows the login page', async ({ page }) => {
    const admin = user('admin');
    await page.goto('/kill-switches');
    await expect(page).toHaveURL(/\/login\?next=/);
    await page.getByLabel('User name').fill(admin.name);
    await page.getByLabel('Password').fill('definitely-not-it');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).toHaveText('Wrong user name or password.');

    await signIn(page, 'admin', '/kill-switches');
    await expect(page).toHaveURL(/\/kill-switches$/);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page).toHaveURL(/\/login/);
    await page.goBack();
    await expect(page).toHaveURL(/\/login/);
    await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  });
});
