import { test } from '@playwright/test';
import * as path from 'node:path';
import { consolePages } from './console-pages';
import { ready, signIn } from './helpers';

// Not a test: it writes docs/screenshots/<name>-<width>.png of every page, for the docs.
// Run with SCREENSHOTS=1. The pages show whatever data the earlier specs made.
const out = path.join(__dirname, '..', '..', 'docs', 'screenshots');
const SIZES = [
  { width: 1440, height: 900 },
  { width: 390, height: 844 },
];

test.describe('screenshots', () => {
  for (const { name, path: url, signedIn } of consolePages) {
    test(`${name} (${url})`, async ({ page }) => {
      const wanted = process.env.SCREENSHOTS === '1';
      const hydrated = test.info().project.name === 'hydrated';
      test.skip(
        !wanted || !hydrated,
        !wanted ? 'docs generator, not a test: set SCREENSHOTS=1 to write docs/screenshots' : 'screenshots are taken in the hydrated project only',
      );

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
