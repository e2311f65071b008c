import { defineConfig } from '@playwright/test';
import base, { demoConsole } from './playwright.config';

// `make screenshots`: every page at 1440 and 390 px into docs/screenshots/, from the tests'
// build with the demo data, on its own port and data. A tool for the docs, not a test.
const { baseURL, webServer } = demoConsole(process.env.SCREENSHOTS_PORT ?? '3300', 'screenshots');

export default defineConfig({
  ...base,
  testDir: './tools',
  testMatch: /screenshots\.ts$/,
  use: { ...base.use, baseURL },
  projects: [
    { name: 'setup', testDir: './tests', testMatch: /global\.setup\.ts/ },
    { name: 'screenshots', dependencies: ['setup'], use: { javaScriptEnabled: true } },
  ],
  webServer,
});
