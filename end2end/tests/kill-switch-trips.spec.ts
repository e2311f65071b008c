import { expect, Page, test } from '@playwright/test';
import { consolePages } from './console-pages';
import { ready, setSwitch, signIn } from './helpers';
import { conversationId, postEvent, saveReceiver, startReceiver } from './receiver';

const RULE = 'outbox.receiver_failing';

/** The banner's line about a trip, on the page as it is now. */
const tripLine = (page: Page) => page.getByTestId('switch-banner').locator('li', { hasText: 'Safe mode was turned on by a trip' });

/** Whether the receiver's alert is firing, as the Overview says. */
async function receiverAlertFiring(page: Page) {
  await page.goto('/');
  const firing = page.getByTestId('firing-alerts');
  return (await firing.count()) > 0 && (await firing.innerText()).includes('delivery attempts over 15 min');
}

test.describe('trips', () => {
  test('a trip from a firing rule turns safe mode on, and every page’s banner says so until a person changes it', async ({ page, request }) => {
    test.setTimeout(180_000);
    const receiver = await startReceiver();
    await signIn(page, 'admin', '/kill-switches/automation');
    // Another test's alert has resolved: this firing is an episode of its own.
    await expect.poll(() => receiverAlertFiring(page), { timeout: 60_000 }).toBe(false);
    await page.goto('/kill-switches/automation');
    await ready(page);
    const form = page.locator('form', { has: page.getByLabel('When this rule fires') });
    await form.getByLabel('When this rule fires').selectOption(RULE);
    await form.getByLabel('Then').selectOption('safe_mode');
    await form.getByRole('button', { name: 'Attach the trip' }).click();
    const trip = page.getByTestId('trip').filter({ hasText: RULE }).filter({ hasText: 'safe mode turns on' });
    await expect(trip).toHaveCount(1);
    try {
      await setSwitch(request, 'safe_mode', false);
      // The receiver fails every delivery: its alert fires, and the trip acts.
      receiver.state.status = 503;
      await saveReceiver(page, receiver.url);
      for (let i = 0; i < 3; i++) await postEvent(request, conversationId());
      await expect
        .poll(
          async () => {
            await page.goto('/');
            return tripLine(page).count();
          },
          { timeout: 90_000 },
        )
        .toBe(1);
      await expect(tripLine(page)).toContainText(`trip: ${RULE} fired`);
      await expect(page.getByTestId('switch-banner').locator('li', { hasText: 'Safe mode is off' })).toHaveCount(0);
      for (const p of consolePages.filter((p) => p.signedIn)) {
        await page.goto(p.path);
        await ready(page);
        await expect(tripLine(page), p.path).toContainText(`trip: ${RULE} fired`);
      }
      // A person turns safe mode off while the alert still fires: the line goes.
      await setSwitch(request, 'safe_mode', false);
      await page.goto('/events');
      await ready(page);
      await expect(tripLine(page)).toHaveCount(0);
      await expect(page.getByTestId('switch-banner').locator('li', { hasText: 'Safe mode is off' })).toHaveCount(1);
    } finally {
      // The receiver takes deliveries again and its alert resolves: the next run's firing
      // is a new episode.
      receiver.state.status = 204;
      await page.goto('/kill-switches/automation');
      await ready(page);
      await trip.getByRole('button', { name: 'Remove' }).click();
      await expect(page.getByTestId('trip').filter({ hasText: RULE })).toHaveCount(0);
      await setSwitch(request, 'safe_mode', false);
      await postEvent(request, conversationId());
      await expect.poll(() => receiverAlertFiring(page), { timeout: 60_000 }).toBe(false);
      receiver.close();
    }
  });
});

