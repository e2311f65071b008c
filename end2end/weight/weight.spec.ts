import { expect, test, Browser, BrowserContext, Page } from '@playwright/test';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { chromium } from '../playwright.config';

// What a person receives, signed in, on the release build served as in production:
// - the cold first load of each page (an empty cache): every byte on the wire (compressed,
//   as served, headers included) until the page has hydrated and the network is idle;
// - the same page opened in a new tab after another page (the shell and styles cached:
//   the site's files are asked again and answered 304).
// The budget is on bytes: 300 KB for a cold first load, its code in its bundle, and a
// second page never downloads the shell again. Times are reported, never tested (they move with the machine's load);
// so is Lighthouse's mobile score (the second test).
const BUDGET_BYTES = 300_000;
const MAX_REQUESTS = 10;
/** A 304 for the shell is its headers: a few hundred bytes. */
const SHELL_REVALIDATED_MAX = 2_000;

const root = path.join(__dirname, '..', '..');
const usersFile = path.join(root, 'target', 'e2e-users.json');
const report = path.join(root, 'target', 'bench', 'page-weight.json');

// Every page, by the path a person opens. Detail pages are found from their list.
const PAGES = [
  '/login',
  '/',
  '/kill-switches',
  '/kill-switches/automation',
  '/kill-switches/approvals',
  '/conversations',
  '/events',
  '/outbox',
  '/outbox/receiver',
  '/audit',
  '/inbox',
  '/idempotency',
  '/measurements',
  '/users',
  '/api-keys',
  '/api',
];
// Detail pages: a conversation and its middleware state reached as a person does, from a
// search (the demo data fills it) and its links; the others by their address (their code
// and layout load whether or not the item exists).
const DETAILS: string[][] = [
  ['/conversations?company=ci-acme-001', 'a[href^="/conversations/view"]'],
  ['/events/conversation?id=ci-acme-001%23none'],
  ['/inbox/user?tenant=demo&inbox=news&uid=user-1'],
  ['/inbox/settings?tenant=demo&inbox=news'],
  ['/idempotency/key?id=console%23kill_switches.change%23none'],
];

type Load = {
  page: string;
  bytes: number;
  requests: number;
  wasm: number;
  hydrated_ms: number | null;
  /** The page's `<head>` preloads its route's bundle (Leptos, from the split manifest). */
  preloaded: boolean;
  /** Each response: its path and its bytes on the wire, to see where a page's weight is. */
  files: [string, number][];
};

/** Opens `url` in a fresh context (nothing cached) and adds up what came over the wire. */
async function coldLoad(browser: Browser, state: string | undefined, url: string): Promise<Load> {
  const context = await browser.newContext({ storageState: state });
  const load = await measure(context, url, true);
  await context.close();
  return load;
}

/** Opens `first`, then `url` in a new tab of the same context (what `first` left in the
 * cache is there), and adds up what `url` brought over the wire. */
async function secondTab(browser: Browser, state: string | undefined, first: string, url: string): Promise<Load> {
  const context = await browser.newContext({ storageState: state });
  await measure(context, first, false);
  const load = await measure(context, url, false);
  await context.close();
  return load;
}

/** Loads `url` in a new tab of `context` until hydrated and idle. */
async function measure(context: BrowserContext, url: string, noCache: boolean): Promise<Load> {
  const page = await context.newPage();
  // When the app marks the body hydrated, note the time since navigation began.
  await page.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.body?.dataset.hydrated === 'true') {
        (window as any).__hydratedAt = performance.now();
        obs.disconnect();
      }
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-hydrated'] });
  });
  // A page that panics while hydrating still sets nothing right: such a load fails here.
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && m.text().includes('panicked')) errors.push(m.text());
  });
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: noCache });
  const urls = new Map<string, string>();
  let bytes = 0;
  let wasm = 0;
  let requests = 0;
  const files: [string, number][] = [];
  cdp.on('Network.responseReceived', (e: any) => urls.set(e.requestId, e.response.url));
  cdp.on('Network.loadingFinished', (e: any) => {
    requests += 1;
    bytes += e.encodedDataLength;
    files.push([new URL(urls.get(e.requestId) ?? 'about:unknown').pathname, e.encodedDataLength]);
    if ((urls.get(e.requestId) ?? '').endsWith('.wasm')) wasm += e.encodedDataLength;
  });
  await page.goto(url, { waitUntil: 'networkidle' });
  await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1);
  await page.waitForLoadState('networkidle');
  const hydrated = await page.evaluate(() => (window as any).__hydratedAt ?? null);
  const preloaded = (await page.locator('head link[rel="preload"][href*="/pkg/bundle_"]').count()) > 0;
  await page.close();
  expect(errors, `${url} hydrates without errors`).toEqual([]);
  return { page: url, bytes, requests, wasm, hydrated_ms: hydrated === null ? null : Math.round(hydrated), preloaded, files };
}

async function signedIn(browser: Browser): Promise<string> {
  const admin = JSON.parse(readFileSync(usersFile, 'utf8')).admin;
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByLabel('User name').fill(admin.name);
  await page.getByLabel('Password').fill(admin.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('signed-in-as')).toContainText(admin.name);
  const file = path.join(root, 'target', 'weight-state.json');
  await context.storageState({ path: file });
  await context.close();
  return file;
}

/** Follows the first link matching each selector in turn, from `start`. The demo data is
 * seeded in the background after the console starts: a page is loaded again until its link
 * is there. */
async function follow(page: Page, start: string, selectors: string[]): Promise<string> {
  let url = start;
  for (const selector of selectors) {
    const link = page.locator(selector).first();
    await expect
      .poll(async () => {
        await page.goto(url);
        return link.count();
      }, { timeout: 120_000 })
      .toBeGreaterThan(0);
    url = (await link.getAttribute('href'))!;
  }
  return url;
}

/** Every page's address: the fixed ones and a detail page of each kind. */
async function everyPage(browser: Browser, state: string): Promise<string[]> {
  const urls = [...PAGES];
  const context = await browser.newContext({ storageState: state });
  const page = await context.newPage();
  for (const [start, ...selectors] of DETAILS) {
    urls.push(await follow(page, start, selectors));
  }
  await context.close();
  return urls;
}

const line = (l: Load) =>
  `${String(l.bytes).padStart(8)} B ${String(l.requests).padStart(3)} req  wasm ${String(l.wasm).padStart(7)} B  hydrated ${l.hydrated_ms} ms${l.preloaded ? '' : ' (no preload)'}`;

test('a cold first load of every page stays within the budget, and a second page reuses the shell', async ({ browser }) => {
  test.setTimeout(400_000);
  const state = await signedIn(browser);
  const urls = await everyPage(browser, state);
  const pages: { page: string; cold: Load; second: Load }[] = [];
  for (const url of urls) {
    const session = url === '/login' ? undefined : state;
    // The page opened second: after the Overview (after /kill-switches for the Overview;
    // signed out, after the login page itself).
    const first = url === '/' ? '/kill-switches' : url === '/login' ? '/login?again=1' : '/';
    pages.push({ page: url, cold: await coldLoad(browser, session, url), second: await secondTab(browser, session, first, url) });
  }
  mkdirSync(path.dirname(report), { recursive: true });
  writeFileSync(report, JSON.stringify({ budget_bytes: BUDGET_BYTES, pages }, null, 2));
  for (const p of pages) {
    console.log(`${p.page.padEnd(48)} cold ${line(p.cold)} | second tab ${line(p.second)}`);
  }
  const over = pages.filter((p) => p.cold.bytes > BUDGET_BYTES).map((p) => `${p.page}: ${p.cold.bytes}`);
  expect(over, `cold first loads over ${BUDGET_BYTES} bytes`).toEqual([]);
  const chatty = pages.filter((p) => p.cold.requests > MAX_REQUESTS).map((p) => `${p.page}: ${p.cold.requests}`);
  expect(chatty, `cold first loads with more than ${MAX_REQUESTS} requests`).toEqual([]);
  // A page's code comes in its bundle, never piece by piece. (Whether the HTML preloaded
  // the bundle is reported: Leptos adds the link on about half the first loads.)
  const pieces = pages.filter((p) => p.cold.files.some(([f]) => /^\/pkg\/(chunk|split)_/.test(f))).map((p) => p.page);
  expect(pieces, 'cold first loads that fetched pieces instead of the bundle').toEqual([]);
  const bundled = pages.filter((p) => !p.cold.files.some(([f]) => f.startsWith('/pkg/bundle_'))).map((p) => p.page);
  expect(bundled, 'cold first loads without their bundle').toEqual([]);
  // The shell came from the cache (a 304), not over the wire again.
  const shell = (l: Load) => l.files.filter(([f]) => f === '/pkg/ops-console.wasm').reduce((n, [, b]) => n + b, 0);
  const reloaded = pages.filter((p) => shell(p.second) > SHELL_REVALIDATED_MAX).map((p) => `${p.page}: ${shell(p.second)}`);
  expect(reloaded, 'second pages that downloaded the shell again').toEqual([]);
  expect(pages.every((p) => shell(p.cold) > 100_000), 'a cold load downloads the shell').toBe(true);
});

/** Lighthouse's mobile preset (performance only), signed in, on every page: reported in
 * target/bench/lighthouse.json and here, never a gate (its figures move with the machine). */
test('Lighthouse on every page, on a phone', async ({ browser }) => {
  test.setTimeout(900_000);
  const { default: lighthouse } = await import('lighthouse');
  const { launch } = await import('chrome-launcher');
  const state = await signedIn(browser);
  const urls = await everyPage(browser, state);
  const cookies = JSON.parse(readFileSync(state, 'utf8')).cookies as { name: string; value: string }[];
  const cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
  const chrome = await launch({ chromePath: chromium.executablePath, chromeFlags: ['--headless=new', ...chromium.args] });
  const base = test.info().project.use.baseURL!;
  const scores: { page: string; score: number | null; tbt_ms: number; lcp_ms: number; fcp_ms: number }[] = [];
  try {
    for (const url of urls) {
      const result = await lighthouse(new URL(url, base).href, {
        port: chrome.port,
        output: 'json',
        logLevel: 'error',
        onlyCategories: ['performance'],
        extraHeaders: url === '/login' ? undefined : { Cookie: cookie },
      });
      const lhr = result!.lhr;
      const ms = (id: string) => Math.round(lhr.audits[id]?.numericValue ?? -1);
      scores.push({
        page: url,
        score: lhr.categories.performance.score === null ? null : Math.round(lhr.categories.performance.score * 100),
        tbt_ms: ms('total-blocking-time'),
        lcp_ms: ms('largest-contentful-paint'),
        fcp_ms: ms('first-contentful-paint'),
      });
    }
  } finally {
    await chrome.kill();
  }
  mkdirSync(path.dirname(report), { recursive: true });
  writeFileSync(path.join(path.dirname(report), 'lighthouse.json'), JSON.stringify(scores, null, 2));
  for (const s of scores) {
    console.log(`${s.page.padEnd(48)} score ${s.score}  TBT ${s.tbt_ms} ms  LCP ${s.lcp_ms} ms  FCP ${s.fcp_ms} ms`);
  }
  // A run that measured nothing fails: every page has a score.
  expect(scores.filter((s) => s.score === null).map((s) => s.page)).toEqual([]);
});
