import { test } from '@playwright/test';
import * as path from 'node:path';
import { consolePages } from '../tests/console-pages';
import { ready, signIn } from '../tests/helpers';

// A tool, not a test (`make screenshots`): it writes docs/screenshots/<name>-<width>.png of
// every page, for the docs, from a console with the demo data.
const out = path.join(__dirname, '..', '..', 'docs', 'screenshots');
const SIZES = [
  { width: 1440, height: 900 },
  { width: 390, height: 844 },
];

test.describe('screenshots', () => {
  for (const { name, path: url, signedIn } of consolePages) {
    test(`${name} (${url})`, async ({ page }) => {
      if (signedIn) {
        await signIn(page, 'admin');
      }
      for (const size of SIZES) {
        await page.setViewportSize(size);
        await page.goto(url);
        await ready(page);
        await page.screenshot({ path: path.join(out, `${name}-${size.width}.png`), fullPage: true, animations: 'disabled' });
      }
    });
  }
});
