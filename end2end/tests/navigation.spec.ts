import { expect, test } from '@playwright/test';
import { jsEnabled, signIn } from './helpers';

// A page's code arrives in one bundle on a first load, and piece by piece (or in its
// bundle, when most of it is missing) when it is opened from another page
// (scripts/bundle-wasm.mjs). Whichever way it came, every page opened from the sidebar
// must render in the browser, with every download answered and nothing thrown.
test('every page opened from the sidebar after a first load renders, its code loaded', async ({ page }) => {
  test.skip(!jsEnabled(), 'navigation in the browser needs the hydrated app');
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  const failed: string[] = [];
  const code: string[] = [];
  page.on('response', (r) => {
    const url = new URL(r.url());
    if (!url.pathname.startsWith('/pkg/')) return;
    code.push(url.pathname);
    if (r.status() >= 400) failed.push(`${url.pathname}: ${r.status()}`);
  });
  const documents: string[] = [];
  page.on('request', (r) => {
    if (r.resourceType() === 'document') documents.push(r.url());
  });
  await signIn(page, 'admin', '/');
  const firstLoad = code.filter((p) => p.endsWith('.wasm'));
  expect(firstLoad.some((p) => p.includes('/bundle___overview_route_view')), firstLoad.join(' ')).toBe(true);

  const nav = page.getByRole('navigation', { name: 'Main' });
  const links = await nav.getByRole('link').evaluateAll((as) =>
    as.map((a) => ({ href: a.getAttribute('href')!, text: a.textContent!.trim() })),
  );
  expect(links.length).toBeGreaterThanOrEqual(10);
  // There and back again: the second visit of a page finds all its code loaded already.
  for (const { href, text } of [...links, ...links.slice().reverse()]) {
    const loadedPages = documents.length;
    await nav.getByRole('link', { name: text, exact: true }).click();
    await expect(page).toHaveURL(new RegExp(`${href.replace(/[?]/g, '\\?')}$`));
    const heading = page.getByRole('heading', { level: 1 });
    await expect(heading, `${href} renders`).toBeVisible();
    await expect(heading).not.toHaveText('Page not found');
    // Rendered by its code in the browser, not a page reloaded from the server.
    expect(documents.slice(loadedPages), `${href} opened in the browser`).toEqual([]);
  }
  expect(failed).toEqual([]);
  expect(errors).toEqual([]);
});
