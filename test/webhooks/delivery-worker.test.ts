// The delivery worker's decisions against a real store and receiver (src/webhooks/
// delivery-worker.ts): a delivery whose last scheduled attempt fails, at an endpoint failing
// since before the delivery was raised, ends FAILED and disables the endpoint with the reason;
// the same failure at an endpoint that succeeded since does not disable it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OutboundPolicy } from '../../src/core/outbound-policy.js';
import { MAX_ATTEMPTS } from '../../src/core/webhook-delivery.js';
import { webhookSecret } from '../../src/core/webhook-endpoints.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { GuardedTransport } from '../../src/outbound/guarded-transport.js';
import { WebhookWorker } from '../../src/webhooks/delivery-worker.js';
import { T0, addAccount, createHarness, type StoreHarness } from '../store/harness.js';

const KEY = Buffer.alloc(32, 3);

describe('webhook delivery worker', () => {
  let receiver: http.Server;
  let port = 0;
  let h: StoreHarness;
  let store: SqlStore;
  let worker: WebhookWorker | null = null;

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.statusCode = 503;
        res.end('down for maintenance');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())));
  beforeEach(async () => {
    h = await createHarness('sqlite');
    store = await h.open();
    await addAccount(store, 'acc_a');
  });
  afterEach(async () => {
    await worker?.close();
    worker = null;
    await h.dispose();
  });

  /** An endpoint with one delivery at its last scheduled attempt. */
  async function lastAttemptPending(failingSince: string | null): Promise<string> {
    await store.createWebhookEndpoint(
      {
        id: 'whe_1',
        accountId: 'acc_a',
        url: `http://127.0.0.1:${port}/hook`,
        description: null,
        events: ['transcription.completed'],
        includeTranscript: false,
        createdAt: T0,
      },
      20,
    );
    await store.createSession({
      accountId: 'acc_a',
      idempotencyKey: 'k',
      requestHash: 'h',
      session: { id: 'rts_1', accountId: 'acc_a', transcriptionId: 'stt_1', title: 't', languageHint: null, options: {}, createdAt: T0 },
      sampleRateHz: 16000,
      call: null,
    });
    await store.setSessionState('rts_1', 'CLOSED', 'COMPLETED');
    const [d] = await store.listWebhookDeliveries('whe_1', 'acc_a', 1);
    await store.db.run('UPDATE webhook_deliveries SET attempts = ?, created_at = ? WHERE id = ?', [
      MAX_ATTEMPTS - 1,
      '2026-01-02T00:00:00.000Z',
      d!.id,
    ]);
    await store.db.run('UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?', [failingSince, 'whe_1']);
    return d!.id;
  }

  function startWorker() {
    worker = new WebhookWorker({
      store,
      secretOf: (id, generation) => webhookSecret(KEY, id, generation),
      transport: new GuardedTransport(new OutboundPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.1/32'] })),
      log: pino({ level: 'silent' }),
      node: 'n1',
      now: () => new Date(),
      retryBaseMs: 5_000,
      leaseMs: 15_000,
      timeoutMs: 5_000,
      perEndpoint: 4,
      maxInFlight: 4,
      pollMs: 50,
      statsMs: 60_000,
      retentionMs: 30 * 24 * 3600_000,
    });
    worker.start();
  }

  async function settled(id: string) {
    for (let i = 0; i < 100; i++) {
      const [d] = await store.listWebhookDeliveries('whe_1', 'acc_a', 1);
      if (d!.id === id && d!.status !== 'PENDING') return d!;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the delivery never settled');
  }

  it('gives up after the last attempt and disables an endpoint failing for the whole schedule', async () => {
    const id = await lastAttemptPending('2026-01-01T00:00:00.000Z');
    startWorker();
    const d = await settled(id);
    expect(d).toMatchObject({ status: 'FAILED', attempts: MAX_ATTEMPTS, lastStatusCode: 503, lastResponse: null });
    const e = await store.getWebhookEndpoint('whe_1', 'acc_a');
    expect(e!.enabled).toBe(false);
    expect(e!.disabledReason).toMatch(/every attempt failed since 2026-01-01/);
  });

  it('keeps an endpoint enabled when it succeeded after the delivery was raised', async () => {
    const id = await lastAttemptPending('2026-01-03T00:00:00.000Z');
    startWorker();
    const d = await settled(id);
    expect(d.status).toBe('FAILED');
    expect((await store.getWebhookEndpoint('whe_1', 'acc_a'))!.enabled).toBe(true);
  });
});
