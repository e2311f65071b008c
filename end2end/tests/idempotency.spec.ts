import { expect, test } from '@playwright/test';
import { apiKey, ready, signIn } from './helpers';

const SCOPE = 'http:POST /api/v1/kill-switches';

test.describe('idempotency monitoring', () => {
  test('the page shows the rates of a scripted mix of calls, a breached threshold in red, and 409s as client errors outside the failure rate', async ({ page, request }) => {
    const key = apiKey();
    const headers = (k: string) => ({ Authorization: `Bearer ${key}`, 'Idempotency-Key': k });
    const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const state = await (await request.get('/api/v1/kill-switches', { headers: { Authorization: `Bearer ${key}` } })).json();
    const body = {
      switch: 'safe_mode',
      enable: !state.safe_mode,
      expected_version: state.version,
      reason: 'e2e scripted mix',
      confirm: true,
    };

    // One change, retried 14 times with the same key: 1 run, 14 replays.
    const first = await request.post('/api/v1/kill-switches', { headers: headers(`${run}-ok`), data: body });
    expect(first.status()).toBe(200);
    for (let i = 0; i < 14; i++) {
      const again = await request.post('/api/v1/kill-switches', { headers: headers(`${run}-ok`), data: body });
      expect(again.status()).toBe(200);
      expect(again.headers()['idempotent-replayed']).toBe('true');
    }
    // Six changes from a stale version: six 409s, the client's own conflict (answered on
    // purpose, each retryable): client errors, not failures.
    for (let i = 0; i < 6; i++) {
      const stale = await request.post('/api/v1/kill-switches', { headers: headers(`${run}-stale-${i}`), data: body });
      expect(stale.status()).toBe(409);
    }

    await signIn(page, 'viewer', '/idempotency');
    const card = page.getByTestId(`scope-${SCOPE}`);
    await expect(card).toBeVisible();
    // The operation in words, the same whether the console's form or the API ran it.
    await expect(card.getByRole('heading', { level: 3 })).toHaveText('Change a kill switch');
    await expect(card).toContainText('From the REST API');
    const count = async (id: string) => Number(await card.getByTestId(id).innerText());
    expect(await count('count-requests')).toBeGreaterThanOrEqual(21);
    expect(await count('count-replayed')).toBeGreaterThanOrEqual(14);
    expect(await count('count-client-errors')).toBeGreaterThanOrEqual(6);
    // The 409s do not move the failure rate: no failure at all in this scope.
    expect(await count('count-failures')).toBe(0);
    const failure = card.getByTestId('alert-failure');
    await expect(failure).toHaveAttribute('data-breached', 'false');
    await expect(failure).toContainText('0.0 %');
    await expect(failure).toHaveAttribute('data-standing', 'fine');
    await expect(failure).toHaveClass(/text-emerald-800/);
    // Replays: 14 of 21 requests (67 %), below the 80 % these tests' console alerts under.
    const cache = card.getByTestId('alert-cache_hit');
    await expect(cache).toHaveAttribute('data-breached', 'true');
    await expect(cache).toContainText('Breached');
    await expect(cache).toHaveClass(/text-red-800/);
    // The compact table: the same scope, its cache-hit rate in red, its failure rate in
    // green, sparklines with the thresholds drawn.
    const row = page.getByRole('table', { name: 'Scopes' }).getByTestId(`scope-row-${SCOPE}`);
    await expect(row.getByTestId('rate-cache_hit')).toHaveAttribute('data-breached', 'true');
    await expect(row.getByTestId('rate-cache_hit')).toHaveClass(/text-red-800/);
    await expect(row.getByTestId('rate-failure')).toHaveAttribute('data-standing', 'fine');
    await expect(row.getByRole('img', { name: 'Failure rate by hour' }).getByTestId('threshold')).toHaveCount(1);
    await expect(row.getByRole('img', { name: 'Cache-hit rate by hour' }).getByTestId('threshold')).toHaveCount(1);
    await expect(row.getByRole('img', { name: `${SCOPE} requests by hour` })).toBeVisible();

    // Overview lists the breach too.
    await page.goto('/');
    await ready(page);
    await expect(page.getByTestId('idempotency-alerts')).toContainText(SCOPE);
    await expect(page.getByTestId('idempotency-alerts')).toContainText('Cache-hit rate');
  });

  test('a request is found by the Idempotency-Key its client sent (hashed on the server) or by its correlation id; its page names the API key and leads to what it changed', async ({ page, request }) => {
    const key = apiKey();
    const auth = { Authorization: `Bearer ${key}` };
    const who = await (await request.get('/api/v1/whoami', { headers: auth })).json();
    const raw = `e2e-lookup-${Date.now().toString(36)}`;
    const tel = `+447703${String(Date.now()).slice(-6)}`;
    const correlation = `trace-${raw}`;
    const res = await request.post('/api/v1/conversations', {
      headers: { ...auth, 'Idempotency-Key': raw, 'X-Correlation-Id': correlation },
      data: {
        conversation_id: `ci-look-001#pi-look-001#req1#${tel.slice(1)}`, channel_method: 'sms', recipient_tel: tel,
        company_id: 'ci-look-001', project_id: 'pi-look-001', request_id: 'req1',
      },
    });
    expect(res.status(), await res.text()).toBe(201);

    await signIn(page, 'viewer', '/idempotency');
    await page.getByLabel('Idempotency-Key, as the client sent it').fill(raw);
    await page.getByLabel('Client (API key)').selectOption(who.name);
    await page.getByRole('button', { name: 'Look up' }).click();
    await ready(page);
    const found = page.getByRole('table', { name: 'Keys found' });
    await expect(found.locator('tbody tr')).toHaveCount(1);
    await expect(found).toContainText('http:POST /api/v1/conversations');
    await found.getByRole('link').first().click();
    await page.waitForURL(/\/idempotency\/key\?id=/);
    await ready(page);
    await expect(page.locator('main')).toContainText('http:POST /api/v1/conversations');
    // It names the API key that sent it (a viewer cannot open the list of keys: no link)
    // and leads to what it changed.
    const apiKeyTerm = page.locator('dt', { hasText: 'API key' });
    await expect(apiKeyTerm.locator('xpath=following-sibling::dd[1]')).toHaveText(who.name);
    await expect(apiKeyTerm.locator('xpath=following-sibling::dd[1]').getByRole('link')).toHaveCount(0);
    await page.locator('main').getByRole('link', { name: 'Conversations', exact: true }).click();
    await page.waitForURL(/\/conversations$/);
    await page.goBack();
    await page.waitForURL(/\/idempotency\/key\?id=/);
    await ready(page);

    await page.goto(`/idempotency?raw=never-sent-${Date.now()}&client=${encodeURIComponent(who.name)}`);
    await ready(page);
    await expect(page.getByTestId('lookup-none')).toBeVisible();

    // The same request, by the correlation id its client logged.
    await page.getByLabel('X-Correlation-Id, as the client logged it').fill(correlation);
    await page.getByRole('button', { name: 'Find' }).click();
    await ready(page);
    const byCorrelation = page.getByRole('table', { name: 'Keys with this correlation id' });
    await expect(byCorrelation.locator('tbody tr')).toHaveCount(1);
    await expect(byCorrelation).toContainText('http:POST /api/v1/conversations');
    await page.getByLabel('X-Correlation-Id, as the client logged it').fill(`never-${correlation}`);
    await page.getByRole('button', { name: 'Find' }).click();
    await ready(page);
    await expect(page.getByTestId('correlation-none')).toBeVisible();
  });
});
