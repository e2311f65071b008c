import { APIRequestContext, expect, Page, test } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { apiKey, jsEnabled, MOMENT, ready, setSwitch, signIn } from './helpers';
import { conversationId, postEvent, saveReceiver, startReceiver } from './receiver';

const auth = () => ({ Authorization: `Bearer ${apiKey()}` });

test.describe('outbox', () => {
  test("a conversation's timeline counts a duplicate delivery and says failed until the receiver takes it, then delivered", async ({ page, request }) => {
    const receiver = await startReceiver();
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      // The receiver refuses for now, asking for 5 s between attempts.
      receiver.state.status = 503;
      receiver.state.retryAfter = '5';
      const conversation = conversationId();
      await postEvent(request, conversation);
      const again = await request.post('/api/v1/events', {
        headers: auth(),
        data: { conversation_id: conversation, message_id: 'm-1', created_at: new Date().toISOString(), channel: 'email', text: 'hello there' },
      });
      expect((await again.json()).duplicate).toBe(true);
      await page.goto(`/events?conversation=${conversation}`);
      await page.getByRole('table', { name: 'Events' }).getByRole('link', { name: conversation }).click();
      await ready(page);
      const event = page.getByTestId('timeline-event');
      await expect(event).toHaveCount(1);
      await expect(event.getByTestId('timeline-message')).toHaveText('m-1');
      await expect(event.getByTestId('timeline-duplicates')).toContainText('1 duplicate');
      await expect(event.getByTestId('timeline-decision')).toContainText('Decided');
      // Every moment to the second.
      await expect(event.locator('time').first()).toHaveText(MOMENT);
      const effects = event.getByTestId('timeline-effect');
      const states = async () => (await effects.evaluateAll((els) => els.map((e) => e.getAttribute('data-state')))).sort();
      await expect.poll(async () => {
        await page.reload();
        return (await states()).some((s) => s === 'failed');
      }, { timeout: 20_000 }).toBe(true);
      // Not taken by the receiver: never "sent" or "delivered".
      expect(receiver.state.accepted).toHaveLength(0);
      expect(await states()).not.toContain('delivered');
      expect(await states()).not.toContain('sent');
      // The receiver takes them now: each delivered, once.
      receiver.state.status = 204;
      const n = await effects.count();
      await expect.poll(async () => {
        await page.reload();
        return (await states()).every((s) => s === 'delivered');
      }, { timeout: 30_000 }).toBe(true);
      expect(receiver.state.accepted).toHaveLength(n);
      expect(new Set(receiver.state.accepted).size).toBe(n);
      // The Outbox, narrowed to this conversation: its delivered side effects, exactly the
      // ones the receiver took.
      await page.getByRole('link', { name: 'Its side effects on the Outbox' }).click();
      await page.waitForURL(/\/outbox\?group=delivered&conversation=/);
      await ready(page);
      expect(page.url()).not.toContain(conversation);
      await expect(page.getByTestId('outbox-conversation')).toContainText(conversation);
      const rows = page.getByTestId('outbox-row');
      await expect(rows).toHaveCount(n);
      for (const status of await page.getByTestId('outbox-status').allInnerTexts()) {
        expect(status).toContain('delivered');
      }
      await expect(page.getByRole('navigation', { name: 'Outbox lists' }).getByRole('link', { name: 'Delivered' })).toHaveAttribute('aria-current', 'page');
    } finally {
      receiver.close();
    }
  });

  test('a receiver that fails every delivery shows its health on the Overview and the Outbox and raises its alert', async ({ page, browser, request }) => {
    const receiver = await startReceiver();
    receiver.state.status = 503;
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      for (let i = 0; i < 3; i++) await postEvent(request, conversationId());
      const health = page.getByTestId('receiver-health');
      await expect
        .poll(async () => {
          await page.goto('/');
          return health.getAttribute('data-failing');
        }, { timeout: 30_000 })
        .toBe('true');
      expect(receiver.state.calls).toBeGreaterThan(0);
      await expect(health).toContainText(/Last hour: about 0 of \d+ delivery attempts delivered\./);
      await expect(health.locator('time').first()).toHaveText(MOMENT);
      await expect(health).toContainText('Failing since');
      await expect(health).toContainText('receiver answered 503');
      await expect(health).toContainText('No delivery has succeeded yet.');
      await expect(page.getByTestId('receiver-status')).toHaveText(`Delivering to ${receiver.url}`);
      // The alert the consoles judge every few seconds here: on the Overview, in words.
      await expect
        .poll(async () => {
          await page.goto('/');
          return (await page.getByTestId('firing-alerts').innerText()).includes('delivery attempts over 15 min');
        }, { timeout: 30_000 })
        .toBe(true);
      // The Outbox says the same, on default's card (named receivers have cards of their own).
      await page.goto('/outbox');
      const card = page.locator('[data-receiver="default"]');
      await expect(card.getByTestId('receiver-health')).toHaveAttribute('data-failing', 'true');
      await expect(card.getByTestId('receiver-health')).toContainText('receiver answered 503');
      // A viewer reads the URL the same way on both pages, without its path.
      const viewer = await browser.newPage();
      try {
        await signIn(viewer, 'viewer', '/outbox');
        const onOutbox = await viewer.locator('[data-receiver="default"]').getByTestId('receiver-status').innerText();
        expect(onOutbox).not.toContain('/hook');
        await viewer.goto('/');
        await expect(viewer.getByTestId('receiver-status')).toHaveText(onOutbox);
        await expect(viewer.getByTestId('receiver-health')).toHaveAttribute('data-failing', 'true');
      } finally {
        await viewer.close();
      }
      // It takes deliveries again: healthy, with its last success.
      receiver.state.status = 204;
      await postEvent(request, conversationId());
      await expect
        .poll(async () => {
          await page.goto('/');
          return health.getAttribute('data-failing');
        }, { timeout: 30_000 })
        .toBe('false');
      await expect(health).toContainText('Last success');
      await expect(health.locator('time').first()).toHaveText(MOMENT);
      await expect(health).not.toContainText('Last error');
    } finally {
      receiver.close();
    }
  });

  test('a dead letter is redriven with a reason and reaches the receiver once', async ({ page, request }) => {
    const receiver = await startReceiver();
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      if (jsEnabled()) {
        // The section renders again once the saved receiver is read back: open it after that.
        const change = page.locator('details').filter({ has: page.getByText('Change the receiver (admins)…') });
        await expect(async () => {
          if (!(await change.evaluate((d) => (d as HTMLDetailsElement).open))) await change.locator('summary').click();
          await expect(page.getByRole('button', { name: 'Send a test event' })).toBeVisible({ timeout: 1_000 });
        }).toPass();
        await page.getByRole('button', { name: 'Send a test event' }).click();
        await expect(page.getByRole('status').filter({ hasText: 'Test message' })).toContainText('receiver answered 204');
      }
      // The receiver refuses (400): the side effect becomes a dead letter at once.
      receiver.state.status = 400;
      const conversation = conversationId();
      const key = await postEvent(request, conversation);
      await expect
        .poll(async () => {
          await page.goto('/outbox?group=dead&cause=http%20400');
          return page.getByTestId('outbox-row').filter({ hasText: conversation }).count();
        }, { timeout: 15_000 })
        .toBe(1);
      await expect(page.getByTestId('outbox-row').filter({ hasText: conversation }).getByTestId('outbox-status')).toContainText('dead letter (http 400)');
      // The counts say they trail, and the moves that they do not.
      await expect(page.getByTestId('outbox-counts-note')).toContainText('trail changes by about a second');
      // Fixed; an operator redrives every http 400 dead letter, saying why.
      receiver.state.status = 204;
      // A cause's forms are on its own list, bound to the cause in the address.
      await signIn(page, 'operator', '/outbox');
      await page.goto('/outbox?group=dead&cause=http%20400');
      await ready(page);
      const redrive = page.locator('details').filter({ has: page.getByText(/^Redrive \d+ dead letters? \(http 400\)…$/) });
      await redrive.locator('summary').click();
      // Without a reason the browser refuses the form at the field itself: nothing is sent.
      await redrive.getByRole('button', { name: /^Redrive \d+ dead letters? \(http 400\)$/ }).click();
      expect(await redrive.getByLabel('Reason').evaluate((el) => (el as HTMLInputElement).validity.valueMissing)).toBe(true);
      await redrive.getByLabel('Reason').fill('e2e: the receiver accepts it now');
      await redrive.getByRole('button', { name: /^Redrive \d+ dead letters? \(http 400\)$/ }).click();
      await expect.poll(() => receiver.state.accepted.filter((id) => id === key).length, { timeout: 20_000 }).toBe(1);
      await page.goto('/outbox');
      const job = page.getByTestId('outbox-job').filter({ hasText: 'e2e: the receiver accepts it now' }).first();
      await expect(job).toContainText('redrive dead (http 400)');
      await expect(job.getByTestId('job-progress')).toHaveText(/^(\d+) of \1/);
      expect(receiver.state.accepted.filter((id) => id === key).length).toBe(1);
    } finally {
      receiver.close();
    }
  });

  test('safe mode holds a queued side effect; an operator releases it and it is delivered', async ({ page, request }) => {
    const receiver = await startReceiver();
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      // The receiver is down: the first attempt fails and the action waits to retry;
      // safe mode goes on before its next attempt, which holds it instead.
      receiver.state.status = 503;
      const conversation = conversationId();
      const key = await postEvent(request, conversation);
      await setSwitch(request, 'safe_mode', true);
      await expect
        .poll(async () => {
          await page.goto('/outbox?group=held');
          return page.getByTestId('outbox-row').filter({ hasText: conversation }).count();
        }, { timeout: 20_000 })
        .toBe(1);
      await expect(page.getByRole('status').filter({ hasText: 'Safe mode is on' })).toBeVisible();
      // Released while safe mode is still on: refused in words, not "done" while it stays held.
      await signIn(page, 'operator', '/outbox?group=held');
      const row = page.getByTestId('outbox-row').filter({ hasText: conversation });
      await row.getByText('Release…').click();
      const form = page.getByTestId('move-form');
      await expect(form).toContainText(conversation);
      await form.getByLabel('Reason to release').fill('e2e: too soon');
      await form.getByRole('button', { name: 'Release' }).click();
      await expect(page.getByRole('alert').filter({ hasText: 'would only be held again' })).toBeVisible();
      await expect(page.getByText('Done: release')).toHaveCount(0);
      await page.goto('/outbox?group=held');
      await expect(row).toHaveCount(1);
      await setSwitch(request, 'safe_mode', false);
      receiver.state.status = 204;
      await page.goto('/outbox?group=held');
      await ready(page);
      await row.getByText('Release…').click();
      await expect(form).toContainText(conversation);
      await form.getByLabel('Reason to release').fill('e2e: incident over');
      await form.getByRole('button', { name: 'Release' }).click();
      await expect.poll(() => receiver.state.accepted.filter((id) => id === key).length, { timeout: 20_000 }).toBe(1);
      await page.goto('/outbox?group=held');
      await expect(page.getByTestId('outbox-row').filter({ hasText: conversation })).toHaveCount(0);
    } finally {
      receiver.close();
    }
  });

  /** An operator stops the deliveries on the Receiver page with the form `testId` and a
   * reason (`stop`), sees why they wait in `words` on the Receiver page and the Outbox while
   * a side effect waits unsent, then ends it with the same form (`end`): it goes once. */
  async function waitsUntilEnded(page: Page, request: APIRequestContext, testId: string, stop: [string, string], end: [string, string], words: (string | RegExp)[]) {
    const receiver = await startReceiver();
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      await signIn(page, 'operator', '/outbox/receiver');
      const form = page.getByTestId(testId);
      const submit = async ([button, reason]: [string, string]) => {
        await form.locator('summary').click();
        await form.getByLabel('Reason').fill(reason);
        await form.getByRole('button', { name: button }).click();
      };
      await submit(stop);
      const waits = page.getByTestId('receiver-waits');
      for (const w of words) await expect(waits).toContainText(w);
      const conversation = conversationId();
      const key = await postEvent(request, conversation);
      // The Outbox says so too, and lists it waiting.
      await page.goto('/outbox');
      await expect(page.locator('[data-receiver="default"]').getByTestId('receiver-waits')).toContainText(words[0]);
      await expect(page.getByTestId('outbox-row').filter({ hasText: conversation })).toHaveCount(1);
      // Not sent (side effects other tests left waiting for a receiver may have reached this
      // one before it stopped).
      expect(receiver.state.accepted.filter((id) => id === key)).toEqual([]);
      await page.goto('/outbox/receiver');
      await ready(page);
      await submit(end);
      await expect(waits).toHaveCount(0);
      await expect.poll(() => receiver.state.accepted.filter((id) => id === key).length, { timeout: 20_000 }).toBe(1);
    } finally {
      receiver.close();
    }
  }

  test('an operator pauses the deliveries with a reason; a side effect waits until they resume, then goes once', async ({ page, request }) => {
    await waitsUntilEnded(page, request, 'pause-form', ['Pause deliveries', 'e2e: receiver maintenance'], ['Resume deliveries', 'e2e: maintenance done'], ['Paused by', '“e2e: receiver maintenance”']);
  });

  test('an operator opens the breaker with a reason; a side effect parks until it closes, then goes once', async ({ page, request }) => {
    await waitsUntilEnded(page, request, 'breaker-form', ['Open the breaker', 'e2e: receiver migration'], ['Close the breaker', 'e2e: migration done'], ['Side effects are parked', /\(e2e-operator[^)]*\): “e2e: receiver migration”/]);
  });

  test("an admin saves the limits every console keeps to; the card says them, and limits no console could keep are refused", async ({ page }) => {
    const receiver = await startReceiver();
    try {
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      const save = async (rate: string, burst: string, concurrency: string) => {
        const form = page.locator('details', { has: page.getByLabel('URL') });
        if ((await form.getAttribute('open')) === null) await form.locator('summary').click();
        await page.getByLabel('Requests a second').fill(rate);
        await page.getByLabel('Burst').fill(burst);
        await page.getByLabel('At once').fill(concurrency);
        await page.getByRole('button', { name: 'Save receiver' }).click();
      };
      // A burst too small for the rate: refused in words, nothing saved.
      await save('5000', '3', '2');
      await expect(page.getByRole('alert')).toContainText('The burst must be at least 7');
      await expect(page.getByTestId('receiver-limits')).toHaveCount(0);
      await save('4', '8', '2');
      const words = page.getByTestId('receiver-limits');
      await expect(words).toHaveText('Every console together: at most 4 requests a second (a burst of 8) and 2 at once.');
      // Back to none, so the tests after this one deliver at full speed.
      await save('0', '0', '0');
      await expect(words).toHaveCount(0);
    } finally {
      receiver.close();
    }
  });

  test('an open form stays with its side effect while the rows around it change', async ({ page, browser, request }) => {
    const receiver = await startReceiver();
    const other = await browser.newPage();
    try {
      await setSwitch(request, 'safe_mode', false);
      await signIn(page, 'admin', '/outbox');
      await saveReceiver(page, receiver.url);
      // Three side effects held by safe mode (each failed once, then came due under it).
      receiver.state.status = 503;
      const conversations = [conversationId(), conversationId(), conversationId()];
      const keys = new Map<string, string>();
      for (const c of conversations) keys.set(c, await postEvent(request, c));
      await setSwitch(request, 'safe_mode', true);
      const rows = page.getByTestId('outbox-row');
      await expect
        .poll(async () => {
          await page.goto('/outbox?group=held');
          const texts = await rows.allTextContents();
          return conversations.filter((c) => texts.some((t) => t.includes(c))).length;
        }, { timeout: 30_000 })
        .toBe(3);
      await setSwitch(request, 'safe_mode', false);
      receiver.state.status = 204;
      // In the order shown: when the first leaves, every row after it moves up by one.
      await signIn(page, 'operator', '/outbox?group=held');
      const texts = await rows.allTextContents();
      const at = (c: string) => texts.findIndex((t) => t.includes(c));
      const [first, second, third] = [...conversations].sort((x, y) => at(x) - at(y));
      const row = (p: Page, c: string) => p.getByTestId('outbox-row').filter({ hasText: c });
      // This operator opens the second one's release and types a reason...
      await row(page, second).getByText('Release…').click();
      const form = page.getByTestId('move-form');
      await expect(form).toContainText(second);
      await form.getByLabel('Reason to release').fill('e2e: the second one');
      // ...while another releases the first, in another tab.
      await signIn(other, 'operator', '/outbox?group=held');
      await row(other, first).getByText('Release…').click();
      await other.getByTestId('move-form').getByLabel('Reason to release').fill('e2e: the first one');
      await other.getByTestId('move-form').getByRole('button', { name: 'Release' }).click();
      await expect.poll(() => receiver.state.accepted.filter((id) => id === keys.get(first)).length, { timeout: 20_000 }).toBe(1);
      if (jsEnabled()) {
        // The first page reads the list again by itself: the first is gone, the rows moved
        // up, and the open form is still the second one's, with what was typed.
        await expect(row(page, first)).toHaveCount(0, { timeout: 30_000 });
        await expect(form).toContainText(second);
        await expect(form.getByLabel('Reason to release')).toHaveValue('e2e: the second one');
      }
      await form.getByRole('button', { name: 'Release' }).click();
      await expect.poll(() => receiver.state.accepted.filter((id) => id === keys.get(second)).length, { timeout: 20_000 }).toBe(1);
      // The form of an item that left the list offers nothing.
      await expect(page.getByTestId('move-form')).toHaveCount(0);
      await expect(page.getByTestId('move-gone')).toBeVisible();
      // The third was never released: still held, nothing sent.
      await page.goto('/outbox?group=held');
      await expect(row(page, third)).toHaveCount(1);
      expect(receiver.state.accepted).not.toContain(keys.get(third));
      await row(page, third).getByText('Discard…').click();
      await page.getByTestId('move-form').getByLabel('Reason to discard').fill('e2e: tidy up');
      await page.getByTestId('move-form').getByRole('button', { name: 'Discard' }).click();
      await expect(row(page, third)).toHaveCount(0);
    } finally {
      await other.close();
      receiver.close();
    }
  });
});
