import { defineConfig } from '@playwright/test';
import base from './playwright.config';

// The page-weight budget: the release build (what production serves, precompressed),
// with the demo data so pages show what a team's console shows. Its own port and data.
const port = process.env.WEIGHT_PORT ?? '3200';
const baseURL = `http://127.0.0.1:${port}`;
const server = './target/release/ops-console';

export default defineConfig({
  ...base,
  testDir: './weight',
  use: { ...base.use, baseURL },
  projects: [
    { name: 'setup', testDir: './tests', testMatch: /global\.setup\.ts/ },
    { name: 'weight', dependencies: ['setup'] },
  ],
  webServer: {
    ...(base.webServer as any),
    command: `${server} serve`,
    url: `${baseURL}/healthz`,
    env: {
      ...(base.webServer as any).env,
      OPS_APP_SITE_ADDR: `127.0.0.1:${port}`,
      OPS_APP_DATA_DIR: 'target/weight-data',
      OPS_APP_DEMO_DATA: 'true',
      LOG_FILE: 'target/test-logs/weight.log',
    },
  },
});
