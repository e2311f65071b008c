import { APIRequestContext, expect, test } from '@playwright/test';
import { randomInt } from 'node:crypto';
import { apiKey, ready, signIn } from './helpers';

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

const today = () => new Date().toISOString().slice(0, 10);
const yesterday = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

test.describe('conversations', () => {
  test('search by phone, filter by status and date, page forward and back, open one: masked for a viewer, revealed for an admin with a reason', async ({ page, request, browser }) => {
    const tel = `+447700${randomInt(100000, 999999)}`;
    await seed(request, tel);

    await signIn(page, 'viewer', '/conversations');
    await page.getByLabel('Recipient phone or email').fill(tel);
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

    await page.getByLabel('Status').selectOption('initial_message_sent');
    await page.getByLabel('Created from').fill(today());
    await page.getByLabel('Created to').fill(today());
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(rows).toHaveCount(10);
    for (const s of await rows.getByTestId('status').allTextContents()) expect(s).toBe('initial_message_sent');

    await page.getByLabel('Created from').fill(yesterday());
    await page.getByLabel('Created to').fill(yesterday());
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await expect(rows).toHaveCount(0);
    await expect(page.getByTestId('search-meta')).toContainText('0 matching');

    await page.getByLabel('Created from').fill(today());
    await page.getByLabel('Created to').fill(today());
    await page.getByRole('button', { name: 'Search' }).click();
    await ready(page);
    await rows.first().getByRole('link').click();
    // The detail page's code loads with it (a lazy route): the address changes once it is in.
    await page.waitForURL(/\/conversations\/view\?/);
    await ready(page);
    const detailUrl = page.url();
    expect(detailUrl).not.toContain(tel.slice(1));
    await expect(page.getByTestId('conversation-status')).toHaveText('initial_message_sent');
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
    if (!(await admin.getByLabel('Why do you need them? (audited)').isVisible())) {
      await admin.getByText('Reveal contact details…').click();
    }
    await admin.getByLabel('Why do you need them? (audited)').fill('Customer called back, ticket 4411');
    await admin.getByRole('button', { name: 'Reveal' }).click();
    await ready(admin);
    await expect(admin.getByTestId('contact-phone')).toHaveText(tel);
    await expect(admin.getByTestId('contact-name')).toHaveText('Jane Doe');
    await admin.close();
  });
});
