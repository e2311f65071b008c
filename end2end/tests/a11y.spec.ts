import AxeBuilder from '@axe-core/playwright';
import { Browser, expect, Page, test } from '@playwright/test';
import { consolePages } from './console-pages';
import { jsEnabled, ready, signIn } from './helpers';

type AxeResults = Awaited<ReturnType<AxeBuilder['analyze']>>;
type Violation = AxeResults['violations'][number];

const WCAG = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
const FAILING = new Set(['serious', 'critical']);
// A phone, and the width WCAG 1.4.10 (reflow) asks content to fit without scrolling sideways.
const PHONES = [
  { width: 390, height: 844 },
  { width: 320, height: 640 },
];

async function open(page: Page, path: string) {
  await page.goto(path);
  await ready(page);
}

function describe(v: Violation): string {
  const targets = v.nodes
    .slice(0, 3)
    .map((n) => n.target.map((t) => (Array.isArray(t) ? t.join(' >>> ') : t)).join(' → '));
  const more = v.nodes.length > 3 ? ` (+${v.nodes.length - 3} more)` : '';
  return `  - ${v.id} [${v.impact ?? 'no impact'}] ${v.help}\n      ${v.helpUrl}\n      at: ${targets.join('  |  ')}${more}`;
}

/**
 * axe runs inside the page, so it hangs where the page's JavaScript is off. For the no-js
 * project it scans the pages as the server sent them: a context that runs scripts, but with
 * the app's own scripts and WebAssembly blocked, so nothing hydrates. One context for every
 * page (signed in once, when `signedIn`).
 */
async function servedHtmlScanner(browser: Browser, baseURL: string | undefined, signedIn: boolean) {
  const context = await browser.newContext({ baseURL, javaScriptEnabled: true });
  await context.route('**/*', (route) => {
    const r = route.request();
    return r.resourceType() === 'script' || /\.wasm(\?|$)/.test(r.url()) ? route.abort() : route.continue();
  });
  const page = await context.newPage();
  if (signedIn) {
    await signIn(page, 'admin');
  }
  return {
    scan: async (path: string) => {
      await page.goto(path);
      return await new AxeBuilder({ page }).withTags(WCAG).analyze();
    },
    close: () => context.close(),
  };
}

/**
 * How far the document scrolls sideways, and what sticks out past the viewport's right edge:
 * first the elements where it starts (a box wider than its parent allows, or a box whose own
 * text runs past it), then the rest, rightmost first.
 */
async function sideways(page: Page) {
  return page.evaluate(() => {
    const vw = window.innerWidth;
    const x = window.scrollX;
    const visible = (el: Element) => getComputedStyle(el).overflowX === 'visible';
    const boxRight = (el: Element) => el.getBoundingClientRect().right + x;
    // Overflowing content of a box that does not clip reaches past the box.
    const reach = (el: Element) => (visible(el) ? Math.max(boxRight(el), el.getBoundingClientRect().left + x + el.scrollWidth) : boxRight(el));
    const past = (right: number) => right > vw + 1;
    // Inside an element that clips or scrolls on x (a table's overflow-x-auto wrapper),
    // sticking out is that element's business: the page does not scroll for it.
    const contained = (el: Element) => {
      for (let a = el.parentElement; a && a !== document.body && a !== document.documentElement; a = a.parentElement) {
        if (!visible(a)) return true;
      }
      return false;
    };
    const found: { what: string; how: string; right: number; width: number; rank: number }[] = [];
    for (const el of Array.from(document.body.querySelectorAll('*'))) {
      const right = reach(el);
      if (!past(right) || contained(el)) continue;
      const style = getComputedStyle(el);
      if (style.position === 'fixed' || style.display === 'none') continue;
      const parent = el.parentElement;
      const boxOut = past(boxRight(el));
      const boxStarts = boxOut && (!parent || parent === document.body || !past(boxRight(parent)));
      const textStarts = !boxOut && !Array.from(el.children).some((c) => past(reach(c)));
      const cls = (el.getAttribute('class') ?? '').trim().split(/\s+/).filter(Boolean).slice(0, 8).join('.');
      const testid = el.getAttribute('data-testid');
      const text = ((el as HTMLElement).innerText ?? '').replace(/\s+/g, ' ').trim().slice(0, 40);
      found.push({
        what:
          el.tagName.toLowerCase() +
          (el.id ? `#${el.id}` : '') +
          (cls ? `.${cls}` : '') +
          (testid ? ` [data-testid=${testid}]` : '') +
          (text ? ` "${text}"` : ''),
        how: boxOut ? 'its box' : 'its content (text that does not wrap?)',
        right: Math.round(right),
        width: Math.round(el.getBoundingClientRect().width),
        rank: boxStarts || textStarts ? 1 : 0,
      });
    }
    found.sort((a, b) => b.rank - a.rank || b.right - a.right);
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: vw, culprits: found.slice(0, 5), total: found.length };
  });
}

/** Each table's first row as a phone shows it: its display, each cell's heading, its box's overflow. */
async function tablesAsLists(page: Page) {
  return page.evaluate(() =>
    [...document.querySelectorAll('table')].map((t) => {
      const row = t.querySelector('tbody > tr');
      const cells = row ? [...row.querySelectorAll(':scope > td')] : [];
      const titles = [...t.querySelectorAll('thead th')].slice(0, cells.length).map((th) => th.textContent?.trim() ?? '');
      const labels = cells.map((td) => {
        const c = getComputedStyle(td, '::before').content;
        // `"Title"`, or `"Title" / ""` where the browser keeps the alternative text.
        const quoted = c.match(/^"((?:[^"\\]|\\.)*)"/);
        return quoted ? quoted[1].replace(/\\(.)/g, '$1') : '';
      });
      const box = t.parentElement!;
      return { name: t.getAttribute('aria-label'), display: getComputedStyle(row ?? t).display, titles, labels, overflow: box.scrollWidth - box.clientWidth };
    }),
  );
}

/** a. axe's serious and critical violations fail; the others are printed. */
function expectNoSerious(path: string, results: AxeResults) {
  const serious = results.violations.filter((v) => FAILING.has(v.impact ?? ''));
  const minor = results.violations.filter((v) => !FAILING.has(v.impact ?? ''));
  if (minor.length) {
    console.log(`${path}: ${minor.length} minor or moderate axe violation(s), not failing:\n${minor.map(describe).join('\n')}`);
  }
  expect
    .soft(serious.map((v) => v.id), `${path}: ${serious.length} serious or critical axe violation(s):\n${serious.map(describe).join('\n')}\n`)
    .toEqual([]);
}

/** b. and c.: the page on each phone, then back at the desktop size it started at. */
async function expectPhoneLayout(page: Page, path: string) {
  const desktop = page.viewportSize();
  for (const size of PHONES) {
    await page.setViewportSize(size);
    await open(page, path);
    // b. The document itself never scrolls sideways on a phone.
    const s = await sideways(page);
    const culprits = s.culprits.length
      ? s.culprits.map((c) => `  - ${c.what}: ${c.how} reaches ${c.right}px (box width ${c.width}px)`).join('\n') +
        (s.total > s.culprits.length ? `\n  (${s.total - s.culprits.length} more)` : '')
      : '  (no element found: look for negative margins, pseudo-elements or 100vw widths)';
    expect
      .soft(
        s.scrollWidth,
        `${path} at ${size.width}×${size.height}: the page scrolls sideways (scrollWidth ${s.scrollWidth}px, viewport ${s.innerWidth}px). ` +
          `Sticking out past the right edge:\n${culprits}\n`,
      )
      .toBeLessThanOrEqual(s.innerWidth + 1);

    // c. Tables read as lists on a phone: each cell is a line headed by its column's
    // title, and nothing is left to scroll inside a table's own box.
    for (const t of await tablesAsLists(page)) {
      expect.soft(t.display, `${path} at ${size.width} px: table "${t.name}" is still a table`).toBe('block');
      expect.soft(t.labels, `${path} at ${size.width} px: table "${t.name}": a cell not headed by its column`).toEqual(t.titles);
      expect.soft(t.overflow, `${path} at ${size.width} px: table "${t.name}" scrolls sideways in its box`).toBeLessThanOrEqual(1);
    }
  }
  if (desktop) {
    await page.setViewportSize(desktop);
  }
}

test.describe('accessibility and phone layout', () => {
  // Hydrated: a test a page.
  for (const { name, path, signedIn } of consolePages) {
    test(`${name} (${path}): no serious axe violations, no sideways scrolling at 390 and 320 px`, async ({ page }) => {
      test.skip(!jsEnabled(), 'without JavaScript every page is checked in the one test below');
      if (signedIn) {
        await signIn(page, 'admin');
      }
      await open(page, path);
      expectNoSerious(path, await new AxeBuilder({ page }).withTags(WCAG).analyze());
      await expectPhoneLayout(page, path);
    });
  }

  // Without JavaScript: the same checks of every page, as the server sent it, in one test
  // that signs in once (a sign-in and two contexts a page had made these checks cost as
  // much as the rest of the no-js project).
  test('every page as the server sent it: no serious axe violations, no sideways scrolling at 390 and 320 px', async ({ page, browser, baseURL }) => {
    test.skip(jsEnabled(), 'hydrated, each page has its own test above');
    test.setTimeout(consolePages.length * 30_000);
    for (const signedIn of [false, true]) {
      const pages = consolePages.filter((p) => p.signedIn === signedIn);
      const scanner = await servedHtmlScanner(browser, baseURL, signedIn);
      try {
        if (signedIn) {
          await signIn(page, 'admin');
        }
        for (const { path } of pages) {
          await open(page, path);
          expectNoSerious(path, await scanner.scan(path));
          await expectPhoneLayout(page, path);
        }
      } finally {
        await scanner.close();
      }
    }
  });
});
