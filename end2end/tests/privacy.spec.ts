import { APIRequestContext, expect, Page, test } from '@playwright/test';
import { randomBytes, randomInt } from 'node:crypto';
import { apiKey, ready, signIn } from './helpers';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });

/** Personal data seeded where every page could show it. */
type Person = { tel: string; digits: string; email: string; surname: string; tenant: string };

function letters(n: number): string {
  return randomBytes(n)
    .toString('hex')
    .replace(/[0-9]/g, (c) => 'ghijklmnop'[Number(c)]);
}

async function seed(request: APIRequestContext): Promise<Person> {
  const tag = letters(3);
  const digits = `4477009${randomInt(10000, 99999)}`;
  const p: Person = {
    tel: `+${digits}`,
    digits,
    email: `priya.${tag}@example.com`,
    surname: `Shah${tag}`,
    tenant: `e2e-p-${tag}`,
  };
  // A conversation of the conversations table: its id ends with the recipient's phone.
  const id = `ci-e2e-p01#pi-e2e-p01#req-${tag}#${digits}`;
  const c = await request.post('/api/v1/conversations', {
    headers: auth(),
    data: {
      conversation_id: id,
      channel_method: 'whatsapp',
      recipient_tel: p.tel,
      company_id: 'ci-e2e-p01',
      project_id: 'pi-e2e-p01',
      request_id: `req-${tag}`,
      recipient_first_name: 'Priya',
      recipient_last_name: p.surname,
      company_name: 'E2E Privacy',
      channel_config: { company_whatsapp_number: '+447700900101' },
    },
  });
  expect(c.status(), await c.text()).toBe(201);
  // Helpdesk events whose conversation ids are the phone and the email.
  for (const [conversation, message] of [[p.tel, `m-${tag}-1`], [p.email, `m-${tag}-2`]]) {
    const e = await request.post('/api/v1/events', {
      headers: auth(),
      data: { conversation_id: conversation, message_id: message, created_at: new Date().toISOString(), channel: 'email', text: 'Where is my order? It has not arrived' },
    });
    expect(e.status(), await e.text()).toBe(200);
  }
  // A measurement whose user id is an email.
  const m = await request.post('/api/v1/measurements', {
    headers: auth(),
    data: { measurement_id: `pm-${tag}`, user_id: p.email, weight: 70.5, unit: 'kg', timestamp: new Date().toISOString(), source: 'scale' },
  });
  expect(m.status(), await m.text()).toBe(201);
  // A message to that user.
  expect((await request.put(`/api/v1/inbox/tenants/${p.tenant}`, { headers: auth(), data: { title: 'Privacy', ttl: '30d' } })).status()).toBe(200);
  const pub = await request.post(`/api/v1/inbox/tenants/${p.tenant}/inboxes/news/messages`, {
    headers: { ...auth(), 'Idempotency-Key': `priv-${tag}` },
    data: { audience: { kind: 'users', uids: [p.email], label: `for ${p.email}` }, title: 'Hello', body: 'Your plan renews soon.' },
  });
  expect(pub.status(), await pub.text()).toBe(201);
  return p;
}

/** Everything a page shows or links to: its text, title, link targets and field values. */
async function exposed(page: Page): Promise<string> {
  return page.evaluate(() =>
    [
      document.title,
      document.body.innerText,
      ...[...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href') ?? ''),
      ...[...document.querySelectorAll('input, textarea')].map((i) => (i as HTMLInputElement).value),
    ].join('\n'),
  );
}

function assertClean(text: string, p: Person, where: string) {
  for (const secret of [p.digits, p.email, p.email.replace('@', '.at.'), p.surname]) {
    expect(text.includes(secret), `${where} shows ${secret}`).toBe(false);
  }
}

async function visit(page: Page, path: string, p: Person) {
  await page.goto(path);
  await ready(page);
  assertClean(await exposed(page), p, path);
  assertClean(page.url(), p, `the URL of ${path}`);
}

test.describe('privacy', () => {
  test('a viewer sees no phone, email or name on any page, link, title or export', async ({ page, request, browser }) => {
    const p = await seed(request);
    // An admin reveals the conversation's contact: the audit record lands in the
    // conversation's partition, whose id carries the phone.
    const admin = await browser.newPage();
    await signIn(admin, 'admin', '/conversations');
    await admin.getByRole('combobox', { name: 'Search' }).fill(p.tel);
    await admin.getByRole('button', { name: 'Search' }).click();
    await ready(admin);
    await admin.getByRole('table', { name: 'Conversations' }).getByTestId('conversation-row').first().getByRole('link').click();
    await ready(admin);
    await admin.getByText('Reveal contact details…').click();
    await admin.getByLabel('Why do you need them? (audited)').fill('Customer asked for a call back');
    await admin.getByRole('button', { name: 'Reveal' }).click();
    await ready(admin);
    await expect(admin.getByTestId('contact-phone')).toHaveText(p.tel);
    await admin.close();

    await signIn(page, 'viewer', '/');
    for (const path of [
      '/',
      '/kill-switches',
      '/events',
      '/audit',
      '/audit?action_type=reveal_contact',
      '/audit?action_type=decision',
      `/audit?m_outcome=accepted`,
      `/measurements?outcome=accepted`,
      `/inbox?tenant=${p.tenant}&inbox=news`,
      '/idempotency',
      '/api',
    ]) {
      await visit(page, path, p);
    }

    // Following the links a viewer has: an event's conversation, the audit timeline.
    await page.goto('/events');
    await ready(page);
    const link = page.getByRole('table', { name: 'Events' }).getByRole('link', { name: `***-***-${p.digits.slice(-4)}` }).first();
    await link.click();
    await ready(page);
    await expect(page.getByTestId('conversation-id')).toHaveText(`***-***-${p.digits.slice(-4)}`);
    assertClean(await exposed(page), p, 'the conversation state page');
    assertClean(page.url(), p, 'the conversation state URL');

    // The reveal's audit row links to its conversation's timeline, masked.
    await page.goto('/audit?action_type=reveal_contact');
    await ready(page);
    const reveal = page.getByTestId('audit-row').filter({ hasText: `***-***-${p.digits.slice(-4)}` }).first();
    await reveal.getByRole('link').click();
    await ready(page);
    assertClean(await exposed(page), p, 'the revealed conversation\'s timeline');

    // A search typed by the viewer: posted, so neither the URL nor the paging links carry it.
    await page.goto('/conversations');
    await ready(page);
    await page.getByRole('combobox', { name: 'Search' }).fill(p.tel);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(page.getByTestId('search-meta')).toContainText(`***-***-${p.digits.slice(-4)}`);
    assertClean(await exposed(page), p, 'the conversation search');
    assertClean(page.url(), p, 'the conversation search URL');
    await page.getByRole('table', { name: 'Conversations' }).getByTestId('conversation-row').first().getByRole('link').click();
    await ready(page);
    assertClean(await exposed(page), p, 'the conversation page');

    // The audit filter, typed: the same.
    await page.goto('/audit');
    await ready(page);
    await page.getByLabel('Conversation').fill(p.email);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await ready(page);
    await expect(page.getByTestId('audit-conversation')).toContainText('***@***');
    await expect(page.getByTestId('audit-row').first()).toBeVisible();
    assertClean(await exposed(page), p, 'the audit filtered by a typed email');
    assertClean(page.url(), p, 'the audit URL');

    // Exports.
    const csv = await page.request.get('/measurements/audit.csv?outcome=accepted');
    expect(csv.status()).toBe(200);
    assertClean(await csv.text(), p, 'the attempts CSV');
  });
});
