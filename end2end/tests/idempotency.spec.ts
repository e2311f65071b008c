import { expect, test } from '@playwright/test';
import { apiKey, ready, signIn } from './helpers';

const SCOPE = 'http:POST /api/v1/kill-switches';

test.describe('idempotency monitoring', () => {
  test('the page shows the rates of a scripted mix of calls, and a breached threshold in red', async ({ page, request }) => {
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
    // Six changes from a stale version: six runs that fail (409), each retryable.
    for (let i = 0; i < 6; i++) {
      const stale = await request.post('/api/v1/kill-switches', { headers: headers(`${run}-stale-${i}`), data: body });
      expect(stale.status()).toBe(409);
    }

    await signIn(page, 'viewer', '/idempotency');
    const card = page.getByTestId(`scope-${SCOPE}`);
    await expect(card).toBeVisible();
    const count = async (id: string) => Number(await card.getByTestId(id).innerText());
    expect(await count('count-requests')).toBeGreaterThanOrEqual(21);
    expect(await count('count-replayed')).toBeGreaterThanOrEqual(14);
    expect(await count('count-failures')).toBeGreaterThanOrEqual(6);
    // Failures: 6 of 7 runs (or more, over both projects): far above the 10 % threshold.
    const failure = card.getByTestId('alert-failure');
    await expect(failure).toHaveAttribute('data-breached', 'true');
    await expect(failure).toContainText('Breached');
    await expect(failure).toHaveClass(/text-red-800/);
    await expect(card.getByTestId('alert-cache_hit')).toHaveAttribute('data-breached', 'false');

    // Overview lists the breach too.
    await page.goto('/');
    await ready(page);
    await expect(page.getByTestId('idempotency-alerts')).toContainText(SCOPE);
    await expect(page.getByTestId('idempotency-alerts')).toContainText('Failure rate');
  });
});
