import { APIRequestContext, expect, Page, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { apiKey, jsEnabled, ready, signIn } from './helpers';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });

async function setUp(request: APIRequestContext, tenant: string) {
  const t = await request.put(`/api/v1/inbox/tenants/${tenant}`, { headers: auth(), data: { title: 'E2E Co', ttl: '30d' } });
  expect(t.status(), await t.text()).toBe(200);
  const i = await request.put(`/api/v1/inbox/tenants/${tenant}/inboxes/news`, {
    headers: auth(),
    data: { title: 'News', description: 'Product news', ttl: { default: '30d', billing: '7d' } },
  });
  expect(i.status(), await i.text()).toBe(200);
}

async function compose(page: Page, fields: { users?: string; category?: string; title: string; body: string }) {
  const form = page.getByRole('form', { name: 'Compose' });
  if (fields.users) {
    await form.getByLabel('These users').check();
    await form.getByLabel('User ids (one per line or comma-separated)').fill(fields.users);
  } else {
    await form.getByLabel('Everyone').check();
  }
  await form.getByLabel('Category').fill(fields.category ?? '');
  await form.getByLabel('Title').fill(fields.title);
  await form.getByLabel('Message').fill(fields.body);
  await form.getByRole('button', { name: /Preview/ }).click();
  await ready(page);
  await expect(page.getByTestId('preview')).toContainText(fields.title);
}

/** Starts a new message after a receipt. */
async function newMessage(page: Page) {
  await page.getByRole('link', { name: 'New message' }).click();
  await ready(page);
  await expect(page.getByRole('form', { name: 'Compose' })).toBeVisible();
}

test.describe('inbox', () => {
  test('compose and publish to everyone and to two users; a user reads one and the unread count drops; a double-click publishes once', async ({ page, request }) => {
    const r = randomBytes(3).toString('hex');
    const tenant = `e2e-${r}`;
    await setUp(request, tenant);
    await signIn(page, 'operator', `/inbox?tenant=${tenant}&inbox=news`);
    await expect(page.getByRole('heading', { name: 'Inbox News' })).toBeVisible();

    await compose(page, { title: `Maintenance ${r}`, body: 'Tonight from 22:00.' });
    await page.getByRole('button', { name: 'Publish' }).click();
    await ready(page);
    const published = page.getByRole('table', { name: 'Published messages' }).getByTestId('publication');
    await expect(published.filter({ hasText: `Maintenance ${r}` })).toHaveCount(1);

    await expect(page.getByTestId('receipt')).toContainText(`Maintenance ${r}`);
    await newMessage(page);
    await compose(page, { users: `ann-${r}, bob-${r}`, category: 'billing', title: `Invoice ${r}`, body: 'Your invoice is ready.' });
    await page.getByRole('button', { name: 'Publish' }).dblclick();
    await ready(page);
    await expect(published.filter({ hasText: `Invoice ${r}` })).toHaveCount(1);
    await expect(published.filter({ hasText: `Invoice ${r}` })).toContainText('2 users');
    // The second click's post has its answer before the page is loaded again.
    if (jsEnabled()) await page.waitForLoadState('networkidle');
    await page.reload();
    await ready(page);
    await expect(published.filter({ hasText: `Invoice ${r}` })).toHaveCount(1);
    await expect(page.getByTestId('receipt')).toContainText(`to 2 users: ann-${r}, bob-${r}`);

    await page.getByLabel('User id', { exact: true }).fill(`ann-${r}`);
    await page.getByRole('button', { name: 'View as user' }).click();
    await ready(page);
    const items = page.getByRole('list', { name: 'Feed' }).getByTestId('feed-item');
    await expect(items).toHaveCount(2);
    await expect(page.getByTestId('count-unread')).toHaveText('2');
    const invoice = items.filter({ hasText: `Invoice ${r}` });
    await invoice.getByRole('button', { name: 'Mark read' }).click();
    await ready(page);
    await expect(page.getByTestId('count-unread')).toHaveText('1');
    await expect(page.getByTestId('count-read')).toHaveText('1');
    await expect(items.filter({ hasText: `Invoice ${r}` }).getByTestId('read-state')).toHaveText('read');

    // Bob's copy is still unread: receipts are per user.
    const bob = await request.get(`/api/v1/inbox/tenants/${tenant}/inboxes/news/users/bob-${r}/counts`, { headers: auth() });
    expect((await bob.json()).unread).toBe(2);
  });

  test('a published message shows its receipt, and clicking Publish again (a second tab, a back button) publishes nothing more', async ({ page, context, request }) => {
    const r = randomBytes(3).toString('hex');
    const tenant = `e2e-${r}`;
    await setUp(request, tenant);
    await signIn(page, 'operator', `/inbox?tenant=${tenant}&inbox=news`);
    await compose(page, { title: `Once ${r}`, body: 'Only once, please.' });
    // The compose form posts: nothing of the message is in the URL.
    expect(page.url()).not.toContain('Only');
    expect(page.url()).not.toContain(`Once`);
    const previewUrl = page.url();
    // A second tab with the same preview, as an impatient person would open.
    const second = await context.newPage();
    await second.goto(previewUrl);
    await ready(second);
    await page.getByRole('button', { name: 'Publish' }).click();
    await ready(page);
    await expect(page.getByTestId('receipt')).toContainText(`Once ${r}`);
    await expect(page.getByRole('button', { name: 'Publish' })).toHaveCount(0);
    await second.getByRole('button', { name: 'Publish' }).click();
    await ready(second);
    await expect(second.getByTestId('receipt')).toContainText(`Once ${r}`);
    const published = page.getByRole('table', { name: 'Published messages' }).getByTestId('publication');
    await page.reload();
    await ready(page);
    await expect(published.filter({ hasText: `Once ${r}` })).toHaveCount(1);
    const feed = await request.get(`/api/v1/inbox/tenants/${tenant}/inboxes/news/users/someone/feed`, { headers: auth() });
    const items = (await feed.json()).items.filter((i: { title: string }) => i.title === `Once ${r}`);
    expect(items.length).toBe(1);
    await second.close();
  });

  test('editing an inbox shows and keeps its stored lifetimes', async ({ page, request }) => {
    const r = randomBytes(3).toString('hex');
    const tenant = `e2e-${r}`;
    await setUp(request, tenant);
    const seven = await request.put(`/api/v1/inbox/tenants/${tenant}/inboxes/news`, {
      headers: auth(),
      data: { title: 'News', description: 'Product news', ttl: { default: '7d', billing: '2d' } },
    });
    expect(seven.status()).toBe(200);
    await signIn(page, 'operator', `/inbox?tenant=${tenant}&inbox=news`);
    await page.getByRole('link', { name: 'New inbox or edit this one…' }).click();
    await page.waitForURL(/\/inbox\/settings\?/);
    await ready(page);
    const edit = page.locator('details', { hasText: 'New inbox or edit this one…' });
    await edit.locator('summary').click();
    await expect(edit.getByLabel('Default lifetime')).toHaveValue('7d');
    await expect(edit.getByLabel('Lifetimes per type')).toHaveValue('billing=2d');
    await edit.getByLabel('Title').fill(`News ${r}`);
    await edit.getByRole('button', { name: 'Save inbox' }).click();
    await ready(page);
    await expect(page.getByText(`news · billing=2d, default=7d`)).toBeVisible();
  });

  test('a refused value shows its error next to its field in each inbox form', async ({ page, request }) => {
    const r = randomBytes(3).toString('hex');
    const tenant = `e2e-${r}`;
    await setUp(request, tenant);
    await signIn(page, 'operator', `/inbox/settings?tenant=${tenant}&inbox=news`);
    const invalid = async (field: ReturnType<Page['getByLabel']>, says: RegExp) => {
      await expect(field).toHaveAttribute('aria-invalid', 'true');
      await expect(field).toHaveAccessibleDescription(says);
    };

    const tenantForm = page.locator('details', { hasText: 'New tenant or edit settings…' });
    await tenantForm.locator('summary').click();
    await tenantForm.getByLabel('Message lifetime').fill('forever');
    await tenantForm.getByRole('button', { name: 'Save tenant' }).click();
    await ready(page);
    await invalid(tenantForm.getByLabel('Message lifetime'), /a lifetime like 30d or 12h/);
    if (jsEnabled()) {
      // What was typed stays, to be corrected (without JavaScript the page is sent again).
      await expect(tenantForm.getByLabel('Message lifetime')).toHaveValue('forever');
    }
    await expect(tenantForm.getByLabel('Title')).not.toHaveAttribute('aria-invalid', 'true');

    const inboxForm = page.locator('details', { hasText: 'New inbox or edit this one…' });
    if (!(await inboxForm.evaluate((d) => (d as HTMLDetailsElement).open))) {
      await inboxForm.locator('summary').click();
    }
    await inboxForm.getByLabel('Lifetimes per type').fill('billing');
    await inboxForm.getByRole('button', { name: 'Save inbox' }).click();
    await ready(page);
    await invalid(inboxForm.getByLabel('Lifetimes per type'), /Write lifetimes per type as type=7d/);
    await expect(inboxForm.getByLabel('Default lifetime')).not.toHaveAttribute('aria-invalid', 'true');

    await page.goto(`/inbox?tenant=${tenant}&inbox=news`);
    await ready(page);
    const form = page.getByRole('form', { name: 'Compose' });
    await form.getByLabel('Title').fill(`No body ${r}`);
    await form.getByRole('button', { name: /Preview/ }).click();
    await ready(page);
    await invalid(page.getByRole('form', { name: 'Compose' }).getByLabel('Message'), /Write the message/);
    if (jsEnabled()) {
      await expect(page.getByRole('form', { name: 'Compose' }).getByLabel('Title')).toHaveValue(`No body ${r}`);
    }
    await expect(page.getByTestId('preview')).toHaveCount(0);
  });
});
