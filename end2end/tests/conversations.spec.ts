import { APIRequestContext, expect, test } from '@playwright/test';
import { randomInt } from 'node:crypto';
import { apiKey, jsEnabled, ready, signIn } from './helpers';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });

/** 30 WhatsApp conversations with one recipient; 10 of them have an initial message sent. */
async function seed(request: APIRequestContext, tel: string) {
  for (let i = 0; i < 30; i++) {
    const id = `ci-e2e-001#pi-e2e-001#req${i}#${tel.slice(1)}`;
    const res = await request.post('/api/v1/conversations', {
      headers: auth(),
      data: {
        conversation_id: id,
        channel_method: 'whatsapp',
        recipient_tel: tel,
        company_id: 'ci-e2e-001',
        project_id: 'pi-e2e-001',
        request_id: `req${i}`,
        recipient_first_name: 'Jane',
        recipient_last_name: 'Doe',
        company_name: 'E2E Recruitment',
        channel_config: { company_whatsapp_number: '+447700900101' },
      },
    });
    expect(res.status(), await res.text()).toBe(201);
    if (i < 10) {
      const path = `/api/v1/conversations/${encodeURIComponent(tel)}/${encodeURIComponent(id)}`;
      const msg = await request.post(`${path}/messages`, {
        headers: auth(),
        data: { entry_id: `e-${i}`, role: 'assistant', content: 'Hello Jane, are you free on Thursday?' },
      });
      expect(msg.status(), await msg.text()).toBe(201);
      const upd = await request.patch(path, {
        headers: auth(),
        data: { conversation_status: 'initial_message_sent' },
      });
      expect(upd.status(), await upd.text()).toBe(200);
    }
  }
}

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

test.describe('conversations', () => {
  test('search by phone, filter by status and date, page forward and back, open one: masked for a viewer, revealed for an admin with a reason', async ({ page, request, browser }) => {
    const tel = `+447700${randomInt(100000, 999999)}`;
    // The UTC days the seed ran on, read once (a run across midnight spans two).
    const started = Date.now();
    await seed(request, tel);
    const [first, last] = [utcDay(started), utcDay(Date.now())];
    const before = utcDay(Date.parse(first) - 86_400_000);

    await signIn(page, 'viewer', '/conversations');
    await page.getByRole('combobox', { name: 'Search' }).fill(tel);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    const rows = page.getByRole('table', { name: 'Conversations' }).getByTestId('conversation-row');
    await expect(rows).toHaveCount(25);
    await expect(page.getByTestId('search-meta')).toContainText('30 matching');
    await expect(page.locator('body')).not.toContainText(tel.slice(1));

    await page.getByRole('link', { name: 'Next page →' }).click();
    await ready(page);
    await expect(rows).toHaveCount(5);
    await page.getByRole('link', { name: '← Previous page' }).click();
    await ready(page);
    await expect(rows).toHaveCount(25);

    await page.getByText('More filters').click();
    await page.getByLabel('Status').selectOption('initial_message_sent');
    await page.getByLabel('Created from').fill(first);
    await page.getByLabel('Created to').fill(last);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(rows).toHaveCount(10);
    for (const s of await rows.getByTestId('status').allTextContents()) expect(s).toBe('initial message sent');
    // The filters that are set keep "More filters" open.
    await expect(page.getByLabel('Status')).toBeVisible();

    await page.getByLabel('Created from').fill(before);
    await page.getByLabel('Created to').fill(before);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(rows).toHaveCount(0);
    await expect(page.getByTestId('search-meta')).toContainText('0 matching');
    await expect(page.getByTestId('no-results')).toContainText('No conversations match this search.');

    await page.getByLabel('Created from').fill(first);
    await page.getByLabel('Created to').fill(last);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await rows.first().getByRole('link').click();
    // The detail page's code loads with it (a lazy route): the address changes once it is in.
    await page.waitForURL(/\/conversations\/view\?/);
    await ready(page);
    const detailUrl = page.url();
    expect(detailUrl).not.toContain(tel.slice(1));
    await expect(page.getByTestId('conversation-status')).toHaveText('initial message sent');
    await expect(page.getByTestId('contact-phone')).toHaveText(`***-***-${tel.slice(-4)}`);
    await expect(page.getByTestId('message')).toContainText('Message text hidden');
    await expect(page.locator('body')).not.toContainText('Jane');
    await expect(page.getByText('Reveal contact details…')).toHaveCount(0);

    const admin = await browser.newPage();
    await signIn(admin, 'admin', '/');
    await admin.goto(detailUrl);
    await ready(admin);
    await expect(admin.getByTestId('contact-phone')).toHaveText(`***-***-${tel.slice(-4)}`);
    await expect(admin.getByTestId('message')).toContainText('are you free on Thursday');
    await admin.getByText('Reveal contact details…').click();
    await admin.getByRole('button', { name: 'Reveal' }).click();
    await expect(admin.getByRole('alert')).toContainText('Say why');
    await expect(admin.getByLabel('Why do you need them? (audited)')).toHaveAttribute('aria-invalid', 'true');
    await expect(admin.getByLabel('Why do you need them? (audited)')).toHaveAccessibleDescription(/Say why/);
    if (!(await admin.getByLabel('Why do you need them? (audited)').isVisible())) {
      await admin.getByText('Reveal contact details…').click();
    }
    await admin.getByLabel('Why do you need them? (audited)').fill('Customer called back, ticket 4411');
    await admin.getByRole('button', { name: 'Reveal' }).click();
    await ready(admin);
    await expect(admin.getByTestId('contact-phone')).toHaveText(tel);
    await expect(admin.getByTestId('contact-name')).toHaveText('Jane Doe');
    // The reveal says when it ends: 15 minutes after it was made.
    const until = await admin.getByTestId('revealed-until').locator('time').getAttribute('datetime');
    const minutes = (Date.parse(until!) - Date.now()) / 60_000;
    expect(minutes).toBeGreaterThan(13);
    expect(minutes).toBeLessThanOrEqual(15.1);
    await admin.close();
  });

  test('one box: a company by name in any case or by id, a conversation by its id; whole rows open, and the way back keeps the search', async ({ page, request }) => {
    const tag = randomInt(100000, 999999);
    const tel = `+447701${tag}`;
    const companyId = `ci-box-${tag}`;
    const create = async (company: string, name: string, i: number, phone: string) => {
      const id = `${company}#pi-box-001#req${i}#${phone.slice(1)}`;
      const res = await request.post('/api/v1/conversations', {
        headers: auth(),
        data: {
          conversation_id: id, channel_method: 'sms', recipient_tel: phone, company_id: company,
          project_id: 'pi-box-001', request_id: `req${i}`, company_name: name, project_name: 'Box project',
        },
      });
      expect(res.status(), await res.text()).toBe(201);
      return id;
    };
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await create(companyId, `Quokka Freight ${tag}`, i, tel));
    await create(`ci-box2-${tag}`, `Quokka Foods ${tag}`, 9, `+447702${tag}`);

    await signIn(page, 'viewer', '/conversations');
    const box = page.getByRole('combobox', { name: 'Search' });
    const rows = page.getByRole('table', { name: 'Conversations' }).getByTestId('conversation-row');
    // The company's name is suggested as one types.
    await expect(page.locator(`#company-suggestions option[value="Quokka Freight ${tag}"]`)).toHaveCount(1);

    // A name in another case finds the company; its name and id are said, not an index.
    await box.fill(`quokka FREIGHT ${tag}`);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(rows).toHaveCount(3);
    await expect(page.getByTestId('search-meta')).toContainText(`Quokka Freight ${tag} (${companyId})`);
    await expect(page.getByTestId('search-meta')).not.toContainText('index');

    // Part of a name that two companies share: the person chooses.
    await box.fill(`quokka`);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    const choose = page.getByTestId('choose-company');
    await expect(choose.getByRole('link', { name: `Quokka Foods ${tag}` })).toBeVisible();
    await choose.getByRole('link', { name: `Quokka Freight ${tag}` }).click();
    await ready(page);
    await expect(rows).toHaveCount(3);

    // The id, upper-cased.
    await box.fill(companyId.toUpperCase());
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(rows).toHaveCount(3);
    const searchUrl = page.url();

    // A click anywhere on a row opens it; "← Conversations" comes back to the same search.
    await rows.first().click();
    await page.waitForURL(/\/conversations\/view\?/);
    await ready(page);
    await page.getByRole('link', { name: '← Conversations' }).click();
    await page.waitForURL((u) => u.href === searchUrl);
    await ready(page);
    await expect(rows).toHaveCount(3);
    // The box holds the company as the server found it: its id (what was typed is never
    // put in the address as typed; it could be a mistyped phone number).
    await expect(box).toHaveValue(companyId);

    // A conversation id finds that one conversation, and the URL does not carry it.
    await box.fill(ids[1]);
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(rows).toHaveCount(1);
    expect(page.url()).not.toContain(tel.slice(1));
    await expect(rows.first()).toContainText(`***-***-${tel.slice(-4)}`);
    // Times are the reader's local ones, with how long ago.
    await expect(rows.first().locator('time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);
    // With JavaScript, public/local-time.js has rewritten it in the reader's zone.
    if (jsEnabled()) await expect(rows.first().locator('time')).toHaveAttribute('data-shown', '');
    await expect(rows.first()).toContainText(/just now|min ago/);
  });
});
