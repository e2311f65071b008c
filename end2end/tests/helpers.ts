import { APIRequestContext, expect, Page, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

export type Role = 'admin' | 'operator' | 'viewer';
/** Who signs in: a role's user, or the second admin. */
export type Who = Role | 'admin2';

export function user(role: Who | 'spare'): { name: string; password: string } {
  const file = path.join(__dirname, '..', '..', 'target', 'e2e-users.json');
  return JSON.parse(readFileSync(file, 'utf8'))[role];
}

/** Whether this project runs the page's JavaScript (the hydrated app) or not. */
export function jsEnabled(): boolean {
  return test.info().project.use.javaScriptEnabled !== false;
}

/** Waits until the page can act on clicks the way its project expects. */
export async function ready(page: Page) {
  if (jsEnabled()) {
    // A debug build's wasm on a busy machine can take a while to compile.
    await expect(page.locator('body[data-hydrated="true"]')).toHaveCount(1, { timeout: 30_000 });
  }
}

export async function signIn(page: Page, role: Who, next = '/') {
  const u = user(role);
  await page.goto(`/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel('User name').fill(u.name);
  await page.getByLabel('Password').fill(u.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('signed-in-as')).toContainText(u.name);
  await ready(page);
  return u;
}

/** A label no other test run gives: the time in base 36, then 4 random letters. Never a run
 * of 7 digits, which the console redacts as a phone number wherever it shows free text (a
 * reason shown as "mx5u***-***-8369" is not found by its text). */
export function unique(label: string) {
  const letters = Array.from({ length: 4 }, () => 'abcdefghijklmnopqrstuvwxyz'[Math.floor(Math.random() * 26)]);
  return `${label} ${Date.now().toString(36)}${letters.join('')}`;
}

export function apiKey(): string {
  const file = path.join(__dirname, '..', '..', 'target', 'e2e-users.json');
  return JSON.parse(readFileSync(file, 'utf8')).apiKey;
}

/** Sets a kill switch through the API (a test starts from the state it needs, whatever
 * an earlier test left). */
export async function setSwitch(request: APIRequestContext, name: 'safe_mode' | 'automation_enabled', on: boolean) {
  const auth = { Authorization: `Bearer ${apiKey()}` };
  const current = await (await request.get('/api/v1/kill-switches', { headers: auth })).json();
  if (current[name] === on) return;
  const res = await request.post('/api/v1/kill-switches', {
    headers: { ...auth, 'Idempotency-Key': randomBytes(8).toString('hex') },
    data: { switch: name, enable: on, expected_version: current.version, reason: `e2e: ${name} ${on ? 'on' : 'off'} to start from`, confirm: true },
  });
  expect(res.status(), await res.text()).toBe(200);
}

/** A moment as every page shows it, one format: the server's UTC text (without JavaScript)
 * or the reader's zone to the second with its name (hydrated), e.g. `Nov 26, 2026, 12:51:05 PM UTC`. */
export const MOMENT = /(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC|[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2}:\d{2}\s[AP]M [A-Z][A-Za-z+\d:-]{1,8})/;
