import { expect, test } from '@playwright/test';
import { jsEnabled, ready, setSwitch, signIn } from './helpers';
import { conversationId, postEvent, saveReceiver, startReceiver } from './receiver';

/** A moment as the form's `datetime-local` field takes it, in UTC. */
const utc = (d: Date) => d.toISOString().slice(0, 19);
/** The same moment as the field gives it back: Chromium leaves out seconds that are zero. */
const asShown = (d: Date) => utc(d).replace(/:00$/, '');

test.describe('resend', () => {
  test('an operator counts a time window first, then resends it with a reason: the receiver gets the side effect again under its own webhook-id', async ({ page, request }) => {
    const receiver = await startReceiver();
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      const since = new Date(Date.now() - 1_000);
      const key = await postEvent(request, conversationId());
      await expect.poll(() => receiver.state.accepted.filter((id) => id === key).length, { timeout: 20_000 }).toBe(1);
      const until = new Date(Date.now() + 1_000);

      await signIn(page, 'operator', '/outbox/receiver');
      await ready(page);
      const section = page.getByRole('region', { name: 'Resend' });
      const ask = section.locator('form').first();
      await ask.getByLabel('From (UTC)').fill(utc(since));
      await ask.getByLabel('To (UTC)').fill(utc(until));
      await ask.getByRole('button', { name: 'Count' }).click();
      // The count comes first, in words, and sends nothing.
      const shown = section.getByTestId('resend-count');
      await expect(shown).toHaveText(/^\d+ delivered side effects? to default decided from .+ UTC\.$/);
      const n = Number((await shown.textContent())!.match(/^(\d+)/)![1]);
      expect(n).toBeGreaterThanOrEqual(1);
      expect(receiver.state.accepted.filter((id) => id === key).length).toBe(1);
      // The window stays in the form (it is in the address).
      await expect(ask.getByLabel('From (UTC)')).toHaveValue(asShown(since));

      await ready(page);
      const go = section.getByRole('button', { name: `Resend ${n}` });
      // Without a reason the browser refuses the form at the field itself.
      await go.click();
      expect(await section.getByLabel('Reason').evaluate((el) => (el as HTMLInputElement).validity.valueMissing)).toBe(true);
      const reason = `e2e: the receiver lost a window (${jsEnabled() ? 'hydrated' : 'no-js'})`;
      await section.getByLabel('Reason').fill(reason);
      await go.click();
      if (jsEnabled()) {
        await expect(page.getByRole('status').filter({ hasText: 'Resending' })).toContainText(reason);
      }
      // Sent again once, with the id it had.
      await expect.poll(() => receiver.state.accepted.filter((id) => id === key).length, { timeout: 20_000 }).toBe(2);

      // The job's progress on the Outbox: all of what it counted (it saves its progress
      // after each page, which may be just after the delivery).
      const job = page.getByTestId('outbox-job').filter({ hasText: reason }).first();
      await expect
        .poll(async () => {
          await page.goto('/outbox');
          return job.getByTestId('job-progress').textContent();
        }, { timeout: 20_000 })
        .toMatch(/^(\d+) of \1/);
      await expect(job).toContainText('resend delivered');
      expect(receiver.state.accepted.filter((id) => id === key).length).toBe(2);
    } finally {
      receiver.close();
    }
  });
});
