import { defineConfig } from '@playwright/test';

// The console under test: the debug build cargo-leptos made, on its own port and data
// directory, with an embedded DynamoDB Local. Playwright starts it and stops it.
const port = process.env.E2E_PORT ?? '3100';
const baseURL = `http://127.0.0.1:${port}`;
const server = process.env.E2E_SERVER ?? './target/debug/ops-console';
const dataDir = process.env.E2E_DATA_DIR ?? 'target/e2e-data';
/** The second console, which requires approvals (docs/switches.md, "Approvals"). */
export const strictPort = process.env.E2E_STRICT_PORT ?? '3102';
export const strictURL = `http://127.0.0.1:${strictPort}`;

export const chromium = {
  executablePath: '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1',
    // Headless Chromium 156 still renders the address bar's popup as two pages of its own
    // (chrome://omnibox-popup.top-chrome) in every window, one per context: CPU the tests
    // need, for a popup no test opens.
    '--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup',
  ],
};

const mainConsole = {
  command: `${server} serve`,
  cwd: '..',
  url: `${baseURL}/healthz`,
  timeout: 120_000,
  reuseExistingServer: false,
  stdout: 'pipe',
  stderr: 'pipe',
  env: {
    OPS_APP_SITE_ADDR: `127.0.0.1:${port}`,
    OPS_APP_DATA_DIR: dataDir,
    LEPTOS_SITE_ROOT: 'target/site',
    // The tests make their own data.
    OPS_APP_DEMO_DATA: 'false',
    // Side effects retried within seconds: the outbox test waits on them. A retry is read
    // by the first round after it is due, and rounds run each second (the default): more
    // often, the two consoles' idle rounds took most of both cores from the browser.
    OPS_EVENTS_RETRY_SCHEDULE: '2s,2s,2s',
    // A receiver that failed every delivery opens its breaker; a probe this often lets the
    // test that brings it back see it healthy within its wait.
    OPS_EVENTS_BREAKER_PROBE_SECONDS: '3',
    // Alerts judged often: the receiver test waits for its alert on the Overview.
    OPS_ALERTS_CHECK_SECONDS: '5',
    // A cache-hit alert the idempotency test can breach with a scripted mix of calls.
    OPS_IDEMPOTENCY_ALERT_CACHE_HIT_MIN_PCT: '80',
    // The tests' receivers listen on this machine.
    OPS_OPERATIONS_OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32',
    // Scanned after the run: no email, phone or secret may be in it.
    LOG_FILE: 'target/test-logs/e2e.log',
  },
};

const otlpPort = '3104';
/** The consoles under test export traces, in batches sent every half second. */
const traced = {
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`,
  OTEL_BSP_SCHEDULE_DELAY: '500',
};

const config = defineConfig({
  testDir: './tests',
  // One console, one set of kill switches: tests take turns.
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  use: { baseURL, launchOptions: chromium, trace: 'retain-on-failure' },
  projects: [
    { name: 'setup', testMatch: /global\.setup\.ts/ },
    { name: 'hydrated', dependencies: ['setup'], use: { javaScriptEnabled: true } },
    { name: 'no-js', dependencies: ['hydrated'], use: { javaScriptEnabled: false } },
  ],
  webServer: [
    // An OpenTelemetry collector's front door (scripts/otlp-receiver): both consoles export
    // their spans to it, and `make scan-logs` scans them with the logs.
    {
      command: `.venv/bin/python scripts/otlp-receiver target/test-logs/e2e-spans.log ${otlpPort}`,
      cwd: '..',
      port: Number(otlpPort),
      timeout: 30_000,
      reuseExistingServer: false,
    },
    { ...mainConsole, env: { ...mainConsole.env, ...traced } },
    // A second console on the first one's DynamoDB and secret (the endpoint from the file
    // the first writes once its DynamoDB answers), as two consoles behind a load balancer
    // are: this one requires a second admin's approval to turn safety off (the approvals
    // test signs in here).
    {
      ...mainConsole,
      command: `sh -c 'until [ -s "${dataDir}/dynamodb/endpoint" ] && [ -s "${dataDir}/idempotency-secret" ]; do sleep 0.2; done; OPS_DYNAMODB_ENDPOINT=$(cat "${dataDir}/dynamodb/endpoint") exec ${server} serve'`,
      url: `${strictURL}/healthz`,
      env: {
        ...mainConsole.env,
        OPS_APP_SITE_ADDR: `127.0.0.1:${strictPort}`,
        ...traced,
        OPS_SWITCHES_REQUIRE_APPROVAL: 'true',
        LOG_FILE: 'target/test-logs/e2e-strict.log',
      },
    },
  ],
});

export default config;

/** A console of its own for a run beside the tests (page weight, screenshots): the tests'
 * build, the demo data, its own port, data directory and log. */
export function demoConsole(port: string, name: string) {
  const baseURL = `http://127.0.0.1:${port}`;
  const server = process.env.E2E_SERVER ?? './target/debug/ops-console';
  const webServer = mainConsole as any;
  return {
    baseURL,
    webServer: {
      ...webServer,
      command: `${server} serve`,
      url: `${baseURL}/healthz`,
      env: {
        ...webServer.env,
        OPS_APP_SITE_ADDR: `127.0.0.1:${port}`,
        OPS_APP_DATA_DIR: `target/${name}-data`,
        OPS_APP_DEMO_DATA: 'true',
        LOG_FILE: `target/test-logs/${name}.log`,
      },
    },
  };
}
