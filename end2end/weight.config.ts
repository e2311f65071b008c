import { defineConfig } from '@playwright/test';
import base, { demoConsole } from './playwright.config';

// The page-weight budget: the release site (what production serves, precompressed), with
// the demo data so pages show what a team's console shows. Its own port and data. The
// server is the one the tests built (`make build`); a release server sends the same bytes.
const { baseURL, webServer } = demoConsole(process.env.WEIGHT_PORT ?? '3200', 'weight');

export default defineConfig({
  ...base,
  testDir: './weight',
  use: { ...base.use, baseURL },
  projects: [
    { name: 'setup', testDir: './tests', testMatch: /global\.setup\.ts/ },
    { name: 'weight', dependencies: ['setup'] },
  ],
  webServer,
});
