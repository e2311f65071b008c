import { APIRequestContext, expect, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { apiKey, ready, signIn } from './helpers';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });

/** Sets safe mode through the REST API, as incident tooling would. */
async function setSafeMode(request: APIRequestContext, on: boolean) {
  const current = await (await request.get('/api/v1/kill-switches', { headers: auth() })).json();
  if (current.safe_mode === on) return;
  const res = await request.post('/api/v1/kill-switches', {
    headers: { ...auth(), 'Idempotency-Key': randomBytes(8).toString('hex') },
    data: {
      switch: 'safe_mode',
      enable: on,
      expected_version: current.version,
      reason: `e2e: safe mode ${on ? 'on' : 'off'} for the events test`,
      confirm: true,
    },
  });
  expect(res.status(), await res.text()).toBe(200);
}

async function postEvent(request: APIRequestContext, conversation: string, message: string, text: string) {
  const res = await request.post('/api/v1/events', {
    headers: auth(),
    data: {
      conversation_id: conversation,
      message_id: message,
      created_at: new Date().toISOString(),
      channel: 'email',
      text,
      customer: { email: 'someone@example.com' },
    },
  });
  expect(res.status(), await res.text()).toBe(200);
  return res.json();
}

test.describe('events', () => {
  test('posted events show on Events and on the conversation timeline; in safe mode the actions are suppressed', async ({ page, request }) => {
    // Letters only: a run of digits would look like a phone number and be masked.
    const conversation = `e2e-${randomBytes(4).toString('hex').replace(/[0-9]/g, (c) => 'ghijklmnop'[Number(c)])}`;
    await setSafeMode(request, false);
    const first = await postEvent(request, conversation, 'm-1', 'I would like a refund please');
    expect(first.duplicate).toBe(false);
    expect(first.intent).toBe('refund_request');
    const again = await postEvent(request, conversation, 'm-1', 'I would like a refund please');
    expect(again.duplicate).toBe(true);

    await signIn(page, 'viewer', `/events?conversation=${conversation}`);
    const rows = page.getByRole('table', { name: 'Events' }).getByTestId('event-row');
    await expect(rows).toHaveCount(1);
    await expect(rows.first()).toContainText('refund_request → billing');
    await expect(rows.first().getByTestId('duplicates')).toHaveText('1');
    await expect(page.locator('body')).not.toContainText('someone@example.com');

    await rows.first().getByRole('link', { name: conversation }).click();
    await ready(page);
    await expect(page.getByTestId('conversation-state')).toContainText('refund_request');
    const timeline = page.getByRole('table', { name: 'Audit records' });
    const actions = (name: string) => page.getByTestId('audit-action').filter({ hasText: new RegExp(`^${name}$`) });
    await expect(actions('decision')).toHaveCount(1);
    await expect(actions('tag')).toHaveCount(1);
    await expect(timeline.getByTestId('audit-result').filter({ hasText: 'queued: outbox' })).toHaveCount(2);
    // Each record reads as a sentence; its JSON is one click away.
    await expect(timeline.getByTestId('audit-summary').filter({ hasText: /^Tagged .+ — queued for delivery$/ })).toHaveCount(1);
    await expect(timeline.getByTestId('audit-summary').filter({ hasText: /^Decided “refund request”/ })).toHaveCount(1);
    const json = timeline.getByTestId('audit-row').first().getByText('JSON');
    await json.click();
    await expect(timeline.getByTestId('audit-row').first().locator('pre')).toBeVisible();

    await setSafeMode(request, true);
    const suppressed = await postEvent(request, conversation, 'm-2', 'another refund question');
    expect(suppressed.safe_mode).toBe(true);
    await page.reload();
    await ready(page);
    await expect(page.getByTestId('audit-result').filter({ hasText: 'suppressed: safe_mode' }).first()).toBeAttached();
    await expect(page.getByTestId('audit-summary').filter({ hasText: /— suppressed by safe mode$/ }).first()).toBeVisible();
    await expect(actions('decision')).toHaveCount(2);
  });
});
