import { defineConfig } from '@playwright/test';
import base from './playwright.config';

// The page-weight budget: the release site (what production serves, precompressed), with
// the demo data so pages show what a team's console shows. Its own port and data. The
// server is the one the tests built (`make build`); a release server sends the same bytes.
const port = process.env.WEIGHT_PORT ?? '3200';
const baseURL = `http://127.0.0.1:${port}`;
const server = process.env.E2E_SERVER ?? './target/debug/ops-console';

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
