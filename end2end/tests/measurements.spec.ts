import { expect, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { apiKey, ready, signIn } from './helpers';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });
const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');

test.describe('measurements', () => {
  test('a batch posted through the API shows on the chart and in the attempts, rejected ones with their reasons', async ({ page, request }) => {
    const user = `e2e-u-${randomBytes(3).toString('hex')}`;
    const m = (id: string, weight: number, minutesAgo: number) => ({
      measurement_id: id, user_id: user, weight, unit: 'kg', timestamp: at(minutesAgo), source: 'e2e-scale',
    });
    const first = await request.post('/api/v1/measurements', { headers: auth(), data: m('m-0', 80.0, 10) });
    expect(first.status(), await first.text()).toBe(201);
    const batch = await request.post('/api/v1/measurements/batch', {
      headers: auth(),
      data: { measurements: [m('m-1', 80.4, 180), m('m-2', 80.2, 5), m('m-0', 81.0, 10), { ...m('m-3', 80.1, 2), weight: 'heavy' }, m('m-4', 79.9, 1)] },
    });
    expect(batch.status(), await batch.text()).toBe(200);
    const statuses = (await batch.json()).items.map((i: { status: string }) => i.status);
    expect(statuses).toEqual(['out_of_order', 'accepted', 'conflict', 'invalid', 'accepted']);

    await signIn(page, 'viewer', `/measurements?user=${user}`);
    await expect(page.getByRole('img', { name: 'Weight over time' })).toBeVisible();
    await expect(page.getByTestId('rejected-mark')).toHaveCount(2);
    // Axes, a legend, a summary in words, and the data as a table.
    await expect(page.getByTestId('weight-tick')).toHaveCount(4);
    await expect(page.getByTestId('time-tick')).toHaveCount(3);
    await expect(page.getByTestId('legend')).toContainText('rejected');
    await expect(page.getByTestId('series-caption')).toContainText('3 accepted measurements from 79.9 to 80.2 kg, 2 rejected attempts');
    await page.getByText("The chart's data as a table").click();
    await expect(page.getByRole('table', { name: 'Chart data' }).locator('tbody tr')).toHaveCount(5);
    const rows = page.getByRole('table', { name: 'Measurement attempts' }).getByTestId('attempt-row');
    await expect(rows).toHaveCount(6);
    await expect(rows.filter({ hasText: 'out_of_order' })).toContainText('older than the last accepted');
    await expect(rows.filter({ hasText: 'conflict' })).toContainText('weight_kg');
    await expect(rows.filter({ hasText: 'invalid' })).toContainText('weight');
    await expect(rows.getByTestId('attempt-action').filter({ hasText: /^accepted$/ })).toHaveCount(3);

    await page.getByLabel('Outcome').selectOption('out_of_order');
    await page.getByRole('button', { name: 'Show' }).click();
    await ready(page);
    await expect(rows).toHaveCount(1);
    const csv = await request.get(`/measurements/audit.csv?user=${user}`, { headers: { cookie: (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ') } });
    expect(csv.status()).toBe(200);
    const text = await csv.text();
    expect(text.split('\n').filter((l) => l.includes(user))).toHaveLength(6);
  });
});
