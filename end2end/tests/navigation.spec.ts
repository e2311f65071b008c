import { expect, test } from '@playwright/test';
import { jsEnabled, signIn } from './helpers';

// A page's code arrives in its bundle on a first load (preloaded with the HTML, beside the
// shell), and piece by piece (or in its bundle, when most of it is missing) when it is
// opened from another page (scripts/bundle-wasm.mjs). Whichever way it came, every page
// opened from the sidebar must render in the browser, with every download answered and
// nothing thrown.
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
  // The shell in its own file, the page's code in its bundle, and no piece on its own.
  expect(firstLoad.filter((p) => p.endsWith('/ops-console.wasm')).length, firstLoad.join(' ')).toBeGreaterThan(0);
  expect(firstLoad.filter((p) => p.includes('/bundle___overview_route_view')).length, firstLoad.join(' ')).toBeGreaterThan(0);
  expect(firstLoad.filter((p) => /\/(chunk|split)_/.test(p)), firstLoad.join(' ')).toEqual([]);

  const nav = page.getByRole('navigation', { name: 'Main' });
  const links = await nav.getByRole('link').evaluateAll((as) =>
    as.map((a) => ({ href: a.getAttribute('href')!, text: a.textContent!.trim() })),
  );
  expect(links.length).toBeGreaterThanOrEqual(10);
  // There and back again: on the way back every page finds all its code loaded already.
  const firstPass = links.length;
  const route = [...links, ...links.slice().reverse()];
  for (const [i, { href, text }] of route.entries()) {
    const loadedPages = documents.length;
    const loadedCode = code.length;
    const heading = page.getByRole('heading', { level: 1 });
    const before = (await heading.count()) ? await heading.first().innerText() : '';
    await nav.getByRole('link', { name: text, exact: true }).click();
    await expect(page).toHaveURL(new RegExp(`${href.replace(/[?]/g, '\\?')}$`));
    await expect(heading, `${href} renders`).toBeVisible();
    await expect(heading).not.toHaveText('Page not found');
    if (i > 0 && route[i - 1].href !== href) await expect(heading).not.toHaveText(before);
    // Rendered by its code in the browser, not a page reloaded from the server.
    expect(documents.slice(loadedPages), `${href} opened in the browser`).toEqual([]);
    if (i >= firstPass) {
      const fetched = code.slice(loadedCode).filter((p) => p.endsWith('.wasm'));
      expect(fetched, `${href} needed no more code`).toEqual([]);
    }
  }
  // No bundle downloaded twice.
  const bundles = code.filter((p) => p.includes('/bundle_'));
  expect(bundles.length, bundles.join(' ')).toBe(new Set(bundles).size);
  expect(failed).toEqual([]);
  expect(errors).toEqual([]);
});
