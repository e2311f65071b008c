import { expect, Page, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { apiKey, ready, setSwitch, signIn } from './helpers';
import { conversationId, saveReceiver, startReceiver } from './receiver';

/** Opens the receivers' admin forms if they are closed (each change reads the page again). */
async function openRoutes(page: Page) {
  const forms = page.locator('details', { has: page.getByLabel('Address') });
  if ((await forms.getAttribute('open')) === null) await forms.locator('summary').click();
}

/** Routes `type` to the receiver `to` on the Receiver page. */
async function route(page: Page, type: string, to: string) {
  await openRoutes(page);
  await page.getByLabel('Kind').selectOption(type);
  await page.getByLabel('Goes to').selectOption(to);
  await page.getByRole('button', { name: 'Save route' }).click();
  await ready(page);
  await expect(page.getByTestId('routes')).toContainText(`${type} → ${to}`);
}

test.describe('receivers', () => {
  test('an admin adds a receiver and routes tags to it: tags go there, every other side effect to default', async ({ page, request }) => {
    const main = await startReceiver();
    const crm = await startReceiver();
    const name = `crm-${randomBytes(3).toString('hex')}`;
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, main.url);
      await openRoutes(page);
      await page.getByLabel('Name').fill(name);
      await page.getByLabel('Address').fill(crm.url);
      await page.getByRole('button', { name: 'Add receiver' }).click();
      await expect(page.getByLabel('Open receiver').locator(`option[value="${name}"]`)).toHaveCount(1);
      await route(page, 'tag', name);

      const conversation = conversationId();
      const res = await request.post('/api/v1/events', {
        headers: { Authorization: `Bearer ${apiKey()}` },
        data: { conversation_id: conversation, message_id: 'm-1', created_at: new Date().toISOString(), channel: 'email', text: 'Where is my order? It is late and I want a refund' },
      });
      expect(res.status(), await res.text()).toBe(200);
      const ours = (ids: string[]) => ids.filter((id) => id.includes(conversation));
      await expect.poll(() => ours(crm.state.accepted).length, { timeout: 30_000 }).toBeGreaterThan(0);
      await expect.poll(() => ours(main.state.accepted).length, { timeout: 30_000 }).toBeGreaterThan(0);
      expect(ours(crm.state.accepted).every((id) => id.startsWith('act:rp_tag:'))).toBe(true);
      expect(ours(main.state.accepted).some((id) => id.startsWith('act:rp_tag:'))).toBe(false);

      // Its own page: its status, its URL, its own forms.
      await page.getByLabel('Open receiver').selectOption(name);
      await page.getByRole('button', { name: 'Open', exact: true }).click();
      await ready(page);
      await expect(page.getByRole('heading', { name, exact: true })).toBeVisible();
      await expect(page.getByTestId('receiver-status')).toHaveText(`Delivering to ${crm.url}`);
    } finally {
      // Tags back to default, for the tests after this one.
      await page.goto('/outbox/receiver');
      await ready(page);
      await route(page, 'tag', 'default');
      main.close();
      crm.close();
    }
  });
});
