// The webhook outbox in the store (areas/webhooks.ts), on both engines: History status changes
// write their events in their own transaction, for the subscribed enabled endpoints only; a
// call's last leg ending adds call.completed; a claim holds a delivery from other nodes until
// its lease runs out, and a node that lost its claim cannot record an attempt.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEventType } from '../../src/core/webhook-events.js';
import type { CreateBatchJobInput, CreateSessionInput, Store } from '../../src/store/store.js';
import { ENGINES, T0, addAccount, createHarness, type StoreHarness } from './harness.js';

function sessionInput(accountId: string, n: string, call: { callId: string; speaker: string } | null = null): CreateSessionInput {
  return {
    accountId,
    idempotencyKey: `k-${n}`,
    requestHash: 'h',
    session: { id: `rts_${n}`, accountId, transcriptionId: `stt_${n}`, title: `t ${n}`, languageHint: null, options: {}, createdAt: T0 },
    sampleRateHz: 16000,
    call,
  };
}

describe.each(ENGINES)('webhook outbox in the store on %s', (engine) => {
  let h: StoreHarness;
  let store: Store;
  const endpoint = async (id: string, events: WebhookEventType[], accountId = 'acc_a') =>
    store.createWebhookEndpoint(
      { id, accountId, url: 'https://hooks.example.com/x', description: null, events, includeTranscript: false, createdAt: T0 },
      20,
    );
  const types = async (endpointId: string, accountId = 'acc_a') =>
    (await store.listWebhookDeliveries(endpointId, accountId, 100)).map((d) => d.eventType).sort();

  beforeEach(async () => {
    h = await createHarness(engine);
    store = await h.open();
    await addAccount(store, 'acc_a');
    await addAccount(store, 'acc_b');
  });
  afterEach(async () => h.dispose());

  it('writes each status change event once, to the subscribed enabled endpoints of the account only', async () => {
    await endpoint('whe_all', ['transcription.completed', 'transcription.failed', 'session.paused', 'call.completed']);
    await endpoint('whe_done', ['transcription.completed']);
    await endpoint('whe_off', ['transcription.completed']);
    await store.updateWebhookEndpoint('whe_off', 'acc_a', { enabled: false }, new Date());
    await endpoint('whe_b', ['transcription.completed'], 'acc_b');
    await store.createSession(sessionInput('acc_a', '1'));
    await store.createSession(sessionInput('acc_a', '2'));
    await store.setSessionState('rts_1', 'PAUSED', 'PAUSED');
    await store.setSessionState('rts_1', 'PAUSED', 'PAUSED'); // written again: nothing new
    await store.setSessionState('rts_1', 'CLOSED', 'COMPLETED');
    await store.setSessionState('rts_2', 'CLOSED', 'FAILED');
    expect(await types('whe_all')).toEqual(['session.paused', 'transcription.completed', 'transcription.failed']);
    expect(await types('whe_done')).toEqual(['transcription.completed']);
    expect(await types('whe_off')).toEqual([]);
    expect(await types('whe_b', 'acc_b')).toEqual([]);
    const [d] = await store.listWebhookDeliveries('whe_done', 'acc_a', 10);
    expect(d!.id).toMatch(/^msg_/);
    expect(d!.status).toBe('PENDING');
    const event = JSON.parse(d!.payload);
    expect(event).toMatchObject({
      type: 'transcription.completed',
      data: { transcriptionId: 'stt_1', sessionId: 'rts_1', status: 'COMPLETED', title: 't 1' },
    });
    // Another account reads it as missing.
    expect(await store.listWebhookDeliveries('whe_done', 'acc_b', 10)).toEqual([]);
    expect(await store.getWebhookEndpoint('whe_done', 'acc_b')).toBeNull();
  });

  it('adds call.completed when the last open leg of a call ends', async () => {
    await endpoint('whe_calls', ['call.completed']);
    await store.createCall({
      call: { id: 'call_1', accountId: 'acc_a', externalId: 'CA1', title: 'a call', createdAt: T0 },
      idempotency: { key: 'c1', requestHash: 'h' },
    });
    await store.createSession(sessionInput('acc_a', 'l1', { callId: 'call_1', speaker: 'agent' }));
    await store.createSession(sessionInput('acc_a', 'l2', { callId: 'call_1', speaker: 'customer' }));
    await store.setSessionState('rts_l1', 'CLOSED', 'COMPLETED');
    expect(await types('whe_calls')).toEqual([]);
    await store.setSessionState('rts_l2', 'CLOSED', 'FAILED');
    const ds = await store.listWebhookDeliveries('whe_calls', 'acc_a', 10);
    expect(ds).toHaveLength(1);
    expect(JSON.parse(ds[0]!.payload)).toMatchObject({
      type: 'call.completed',
      data: { callId: 'call_1', externalId: 'CA1', status: 'FAILED', legs: [{ speaker: 'agent' }, { speaker: 'customer' }] },
    });
  });

  it('raises transcription.completed and .failed for batch jobs, claimed or not', async () => {
    await endpoint('whe_all', ['transcription.completed', 'transcription.failed']);
    await addAccount(store, 'acc_rich', 100n);
    await endpoint('whe_rich', ['transcription.completed', 'transcription.failed'], 'acc_rich');
    const job = (id: string): CreateBatchJobInput => ({
      job: {
        transcriptionId: id,
        accountId: 'acc_rich',
        options: {},
        notices: [],
        audioFile: `${id}.s16le`,
        charactersCharged: 1n,
        source: { format: 'wav', codec: 'pcm_s16le' },
        createdAt: T0,
      },
      title: `batch ${id}`,
      languageHint: null,
      sampleRateHz: 16000,
      audioSamples: 16_000n,
      idempotency: null,
    });
    for (const id of ['stt_b1', 'stt_b2', 'stt_b3']) expect((await store.createBatchJob(job(id))).kind).toBe('created');
    await store.setBatchJobState('stt_b1', 'DONE');
    expect(await store.failBatchJob('stt_b2', 'undecodable')).toBe(true);
    expect(await store.claimJob({ table: 'batch_jobs', key: 'stt_b3', node: 'n1' }, 5_000, new Date())).toBe(true);
    expect(await store.setClaimedBatchJobState('stt_b3', 'n1', 'DONE')).toBe(true);
    const ds = await store.listWebhookDeliveries('whe_rich', 'acc_rich', 10);
    expect(ds.map((d) => [JSON.parse(d.payload).data.transcriptionId, d.eventType]).sort()).toEqual([
      ['stt_b1', 'transcription.completed'],
      ['stt_b2', 'transcription.failed'],
      ['stt_b3', 'transcription.completed'],
    ]);
    expect(JSON.parse(ds[0]!.payload).data).toMatchObject({ kind: 'batch', sessionId: null, durationSeconds: 1 });
    expect(await types('whe_all')).toEqual([]);
  });

  it('writes nothing when the state change does not commit (a fenced-off write)', async () => {
    await endpoint('whe_all', ['transcription.completed']);
    await store.createSession(sessionInput('acc_a', '1'));
    const wrote = await store.setFencedSessionState({ sessionId: 'rts_1', node: 'nobody', epoch: 1 }, 'CLOSED', 'COMPLETED');
    expect(wrote).toBe(false);
    expect(await types('whe_all')).toEqual([]);
  });

  it('holds a claimed delivery from other nodes until its lease runs out; a node past its claim records nothing', async () => {
    await endpoint('whe_1', ['transcription.completed']);
    await store.createSession(sessionInput('acc_a', '1'));
    await store.setSessionState('rts_1', 'CLOSED', 'COMPLETED');
    const now = new Date(Date.now() + 1000);
    const first = await store.claimWebhookDelivery('node-a', 5_000, now, 4);
    expect(first).not.toBeNull();
    expect(await store.claimWebhookDelivery('node-b', 5_000, now, 4)).toBeNull();
    const later = new Date(now.getTime() + 6_000);
    const second = await store.claimWebhookDelivery('node-b', 5_000, later, 4);
    expect(second!.delivery.id).toBe(first!.delivery.id);
    const attempt = { attempt: 1, node: 'node-a', startedAt: now.toISOString(), durationMs: 5, statusCode: 200, error: null };
    const outcome = {
      deliveryId: first!.delivery.id,
      status: 'DELIVERED' as const,
      nextAttemptAt: null,
      response: 'ok',
      disableEndpoint: null,
      endpointSucceeded: true,
    };
    expect(await store.finishWebhookAttempt({ ...outcome, node: 'node-a', attempt })).toBe(false);
    expect(await store.finishWebhookAttempt({ ...outcome, node: 'node-b', attempt: { ...attempt, node: 'node-b' } })).toBe(true);
    const [d] = await store.listWebhookDeliveries('whe_1', 'acc_a', 10);
    expect(d).toMatchObject({ status: 'DELIVERED', attempts: 1, lastStatusCode: 200, lastResponse: 'ok' });
    expect(d!.log.map((a) => a.node)).toEqual(['node-b']);
    expect(await store.webhookOutboxStats()).toEqual({ depth: 0, oldestCreatedAt: null });
    expect(await store.pruneWebhookDeliveries(T0, 10)).toBe(0); // changed after T0: kept
    expect(await store.pruneWebhookDeliveries(new Date(Date.now() + 60_000).toISOString(), 10)).toBe(1);
    expect(await store.listWebhookDeliveries('whe_1', 'acc_a', 10)).toEqual([]);
  });

  it('limits deliveries in flight per endpoint and refuses a new endpoint past the account limit', async () => {
    await endpoint('whe_1', ['transcription.completed']);
    for (const n of ['1', '2', '3']) {
      await store.createSession(sessionInput('acc_a', n));
      await store.setSessionState(`rts_${n}`, 'CLOSED', 'COMPLETED');
    }
    const now = new Date(Date.now() + 1000);
    expect(await store.claimWebhookDelivery('node-a', 5_000, now, 2)).not.toBeNull();
    expect(await store.claimWebhookDelivery('node-b', 5_000, now, 2)).not.toBeNull();
    expect(await store.claimWebhookDelivery('node-b', 5_000, now, 2)).toBeNull();
    expect((await store.webhookOutboxStats()).depth).toBe(3);
    expect(await endpoint('whe_2', ['transcription.completed'])).not.toBeNull();
    expect(
      await store.createWebhookEndpoint(
        {
          id: 'whe_3',
          accountId: 'acc_a',
          url: 'https://x.example.com',
          description: null,
          events: ['call.completed'],
          includeTranscript: false,
          createdAt: T0,
        },
        2,
      ),
    ).toBeNull();
  });
});
