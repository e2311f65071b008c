// A receiver of side effects in the test's own process, and the steps the tests that
// deliver to one share: point the console at it, send an event whose side effect goes there.
import { APIRequestContext, expect, Page } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { apiKey, ready } from './helpers';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });

/** A receiver in this test's process: answers `status`, and records what it accepted. */
export async function startReceiver() {
  const state = { status: 204, accepted: [] as string[], calls: 0, retryAfter: '' };
  const server = http.createServer((req, res) => {
    state.calls += 1;
    req.resume();
    req.on('end', () => {
      if (state.status < 300) state.accepted.push(String(req.headers['webhook-id'] ?? ''));
      res.statusCode = state.status;
      if (state.status >= 300 && state.retryAfter) res.setHeader('Retry-After', state.retryAfter);
      res.end(state.status < 300 ? '' : 'not now');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, state, close: () => server.close() };
}

/** A conversation id of letters only (digits would be masked as a phone number). */
export function conversationId() {
  return `obx-${randomBytes(4).toString('hex').replace(/[0-9]/g, (c) => 'ghijklmnop'[Number(c)])}`;
}

export async function postEvent(request: APIRequestContext, conversation: string) {
  const res = await request.post('/api/v1/events', {
    headers: auth(),
    data: { conversation_id: conversation, message_id: 'm-1', created_at: new Date().toISOString(), channel: 'email', text: 'hello there' },
  });
  expect(res.status(), await res.text()).toBe(200);
  const body = await res.json();
  expect(body.actions[0].result).toBe('queued');
  return body.actions[0].key as string;
}

/** Points the console at `url` through the Receiver page's form, as an admin. */
export async function saveReceiver(page: Page, url: string) {
  await page.goto('/outbox/receiver');
  await ready(page);
  await page.getByText('Change the receiver (admins)…').click();
  await page.getByLabel('URL').fill(url);
  await page.getByLabel('Deliver').check();
  await page.getByRole('button', { name: 'Save receiver' }).click();
  await expect(page.getByTestId('receiver-status')).toHaveText(`Delivering to ${url}`);
}
