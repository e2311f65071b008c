import { test as setup } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';

// Users for the suite, made with the real CLI against the running console's database.
// (Not under test-results/: Playwright empties that directory between projects.)
export const usersFile = path.join(__dirname, '..', '..', 'target', 'e2e-users.json');

setup('create the users the tests sign in as', async () => {
  const root = path.join(__dirname, '..', '..');
  const bin = process.env.E2E_SERVER ?? path.join(root, 'target', 'debug', 'ops-console');
  const env = { ...process.env, OPS_APP_DATA_DIR: process.env.E2E_DATA_DIR ?? 'target/e2e-data' };
  const users: Record<string, { name: string; password: string } | string> = {};
  // `spare` is a viewer the users' tests disable and enable: nobody else signs in as it.
  // `admin2` is the second pair of eyes of the approvals test.
  for (const [key, role] of [['admin', 'admin'], ['admin2', 'admin'], ['operator', 'operator'], ['viewer', 'viewer'], ['spare', 'viewer']]) {
    const name = `e2e-${key}-${randomBytes(3).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    execFileSync(bin, ['user', 'add', name, '--role', role, '--password-stdin'], {
      cwd: root,
      env,
      input: `${password}\n`,
    });
    users[key] = { name, password };
  }
  // A machine client for the scripted API calls.
  users.apiKey = execFileSync(
    bin,
    ['apikey', 'create', `e2e-bot-${randomBytes(3).toString('hex')}`, '--scopes', 'switches:write,switches:read,events:write,conversations:write,conversations:read,inbox:write,inbox:read,measurements:write'],
    { cwd: root, env },
  )
    .toString()
    .trim();
  mkdirSync(path.dirname(usersFile), { recursive: true });
  writeFileSync(usersFile, JSON.stringify(users));
});
