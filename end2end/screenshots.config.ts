import { defineConfig } from '@playwright/test';
import base from './playwright.config';

// `make screenshots`: every page at 1440 and 390 px into docs/screenshots/, from the tests'
// build with the demo data, on its own port and data. A tool for the docs, not a test.
const port = process.env.SCREENSHOTS_PORT ?? '3300';
const baseURL = `http://127.0.0.1:${port}`;
const server = process.env.E2E_SERVER ?? './target/debug/ops-console';

export default defineConfig({
  ...base,
  testDir: './tools',
  testMatch: /screenshots\.ts$/,
  use: { ...base.use, baseURL },
  projects: [
    { name: 'setup', testDir: './tests', testMatch: /global\.setup\.ts/ },
    { name: 'screenshots', dependencies: ['setup'], use: { javaScriptEnabled: true } },
  ],
  webServer: {
    ...(base.webServer as any),
    command: `${server} serve`,
    url: `${baseURL}/healthz`,
    env: {
      ...(base.webServer as any).env,
      OPS_APP_SITE_ADDR: `127.0.0.1:${port}`,
      OPS_APP_DATA_DIR: 'target/screenshots-data',
      OPS_APP_DEMO_DATA: 'true',
      LOG_FILE: 'target/test-logs/screenshots.log',
    },
  },
});
