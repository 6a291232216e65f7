// Deepgram callbacks in the webhook outbox (areas/webhooks.ts), on both engines: a parked
// delivery hangs on the account's hidden callback endpoint (never listed), is neither claimed
// nor counted until released with its body, is released once only, and is then claimed like
// any delivery, with its own URL.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { ENGINES, addAccount, createHarness, type StoreHarness } from './harness.js';

describe.each(ENGINES)('Deepgram callbacks in the webhook outbox on %s', (engine) => {
  let h: StoreHarness;
  let store: Store;

  beforeEach(async () => {
    h = await createHarness(engine);
    store = await h.open();
    await addAccount(store, 'acc_a');
  });
  afterEach(async () => h.dispose());

  it('parks a delivery until its release, then delivers it to its own URL', async () => {
    const now = new Date();
    const url = 'https://crm.example.com/dg?x=1';
    const id = await store.parkCallbackDelivery({ accountId: 'acc_a', url, payload: '{"parked":1}', now });
    const other = await store.parkCallbackDelivery({ accountId: 'acc_a', url, payload: '{"parked":2}', now });
    expect((await store.listParkedCallbacks(10)).map((p) => [p.id, p.accountId, p.payload])).toEqual(
      [
        [id, 'acc_a', '{"parked":1}'],
        [other, 'acc_a', '{"parked":2}'],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );
    // The hidden endpoint is no endpoint of the account's API.
    expect(await store.listWebhookEndpoints('acc_a')).toEqual([]);
    const later = new Date(now.getTime() + 60_000);
    expect(await store.claimWebhookDelivery('node-a', 10_000, later, 4)).toBeNull();
    expect((await store.webhookOutboxStats()).depth).toBe(0);

    expect(await store.releaseCallbackDelivery(id, '{"metadata":{}}', 'transcription.completed', now)).toBe(true);
    expect(await store.releaseCallbackDelivery(id, '{"again":1}', 'transcription.completed', now)).toBe(false);
    expect((await store.listParkedCallbacks(10)).map((p) => p.id)).toEqual([other]);
    expect((await store.webhookOutboxStats()).depth).toBe(1);
    const claim = await store.claimWebhookDelivery('node-a', 10_000, later, 4);
    expect(claim!.delivery).toMatchObject({
      id,
      callbackUrl: url,
      payload: '{"metadata":{}}',
      eventType: 'transcription.completed',
      status: 'PENDING',
    });
    expect(claim!.endpoint.events).toEqual([]);
    expect(await store.claimWebhookDelivery('node-b', 10_000, later, 4)).toBeNull();
  });
});
