// The live rules evaluator (src/session/rule-alerts.ts) over events as sessions fan them out,
// with a store of its own and a fixed clock: talk-over between two legs of a call placed on
// the wall clock, an entity, a rule reading partials alerting once a segment (not again at the
// final), the speaker scope, the webhook written per alert, and rule changes seen after
// invalidate.
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { ServerEvent } from '../../src/core/protocol.js';
import type { RuleCondition } from '../../src/core/rules.js';
import type { WebhookEvent } from '../../src/core/webhook-events.js';
import { createMetrics } from '../../src/obs/metrics.js';
import { RuleAlerts } from '../../src/session/rule-alerts.js';
import type { SessionContext } from '../../src/session/session-context.js';
import type { RuleRecord, Store } from '../../src/store/store.js';

const NOW = Date.parse('2026-03-01T10:00:00.000Z');
const RATE = 8000;

function ruleOf(id: string, condition: RuleCondition, extra: Partial<RuleRecord> = {}): RuleRecord {
  return {
    id,
    accountId: 'acc_a',
    name: id,
    condition,
    speaker: null,
    partials: false,
    enabled: true,
    createdAt: '',
    updatedAt: '',
    ...extra,
  };
}

function setup(rules: RuleRecord[], legs: Record<string, { callId: string | null; speaker: string | null }>) {
  const webhooks: WebhookEvent[] = [];
  const store = {
    getSession: async (id: string) => ({ id, ...legs[id]! }),
    listRules: vi.fn(async () => rules),
    raiseRuleAlert: async (_a: string, e: WebhookEvent) => webhooks.push(e),
  } as unknown as Store;
  const metrics = createMetrics({ defaults: false });
  const alerts = new RuleAlerts({ store, metrics, log: pino({ level: 'silent' }), now: () => NOW });
  const sent = new Map<string, ServerEvent[]>();
  /** A session that has captured `capturedMs` of audio when it sends `event`. */
  const send = (sessionId: string, capturedMs: number, event: ServerEvent) => {
    const ctx = {
      id: sessionId,
      accountId: 'acc_a',
      transcriptionId: `stt_${sessionId}`,
      rate: RATE,
      cursor: { capturedSamples: BigInt((capturedMs * RATE) / 1000) },
      log: pino({ level: 'silent' }),
    } as unknown as SessionContext;
    const out = sent.get(sessionId) ?? [];
    sent.set(sessionId, out);
    alerts.observe(ctx, event, (e) => out.push(e));
  };
  const alertsOf = (sessionId: string) =>
    (sent.get(sessionId) ?? []).filter((e) => e.type === 'alert') as Array<Extract<ServerEvent, { type: 'alert' }>>;
  return { alerts, store, metrics, webhooks, send, alertsOf };
}

const point = (ms: number) => ({ sample: String((ms * RATE) / 1000), ms, epoch: 1, epochSample: (ms * RATE) / 1000, epochMs: ms });
function final(segmentId: string, text: string, words: Array<[number, number]>): ServerEvent {
  return {
    type: 'final',
    segmentId,
    text,
    trigger: 'commit',
    start: point(words[0]?.[0] ?? 0),
    end: point(words[words.length - 1]?.[1] ?? 0),
    words: words.map(([s, e], i) => ({ word: `w${i}`, confidence: 1, start: point(s), end: point(e) })),
  } as ServerEvent;
}
const partial = (segmentId: string, text: string): ServerEvent => ({ type: 'partial', segmentId, text, start: point(0), end: point(1000) });

describe('live rules evaluator', () => {
  it('alerts talk-over when two legs of a call speak at once longer than the rule says', async () => {
    const t = setup([ruleOf('rul_over', { kind: 'talkOver', seconds: 1.5 })], {
      agent: { callId: 'call_1', speaker: 'agent' },
      customer: { callId: 'call_1', speaker: 'customer' },
    });
    // Both legs sent 3 s of audio by now: the agent spoke 0-3 s, the customer 0.5-2.5 s.
    t.send(
      'agent',
      3000,
      final('seg_0', 'let me explain the whole plan', [
        [0, 900],
        [1000, 2000],
        [2100, 3000],
      ]),
    );
    await vi.waitFor(() => expect(t.store.listRules).toHaveBeenCalled());
    t.send(
      'customer',
      3000,
      final('seg_0', 'no wait stop', [
        [500, 1200],
        [1300, 2500],
      ]),
    );
    await vi.waitFor(() => expect(t.alertsOf('customer')).toHaveLength(1));
    expect(t.alertsOf('customer')[0]).toMatchObject({
      condition: 'talkOver',
      speaker: 'customer',
      otherSpeaker: 'agent',
      callId: 'call_1',
      startMs: 500,
      endMs: 2500,
      match: null,
    });
    expect(t.alertsOf('agent')).toEqual([]);
    // Speech that did not overlap long enough: a third final of the agent long after.
    t.send('agent', 20_000, final('seg_1', 'anyway', [[19_000, 19_500]]));
    await new Promise((r) => setTimeout(r, 50));
    expect(t.alertsOf('agent')).toEqual([]);
  });

  it('alerts an entity, and a partial-reading rule once a segment; the webhook carries each alert', async () => {
    const t = setup(
      [
        ruleOf('rul_card', { kind: 'entity', entity: 'credit_card' }),
        ruleOf('rul_refund', { kind: 'phrases', phrases: ['refund'] }, { partials: true }),
        ruleOf('rul_agent', { kind: 'phrases', phrases: ['refund'] }, { speaker: 'agent' }),
      ],
      { s1: { callId: null, speaker: null } },
    );
    t.send('s1', 1000, partial('seg_0', 'i want a refund'));
    await vi.waitFor(() => expect(t.alertsOf('s1')).toHaveLength(1));
    expect(t.alertsOf('s1')[0]).toMatchObject({ ruleId: 'rul_refund', final: false, match: { text: 'refund', start: 9, end: 15 } });
    t.send('s1', 3000, final('seg_0', 'I want a refund to 4242 4242 4242 4242', [[0, 2900]]));
    await vi.waitFor(() => expect(t.alertsOf('s1')).toHaveLength(2));
    await new Promise((r) => setTimeout(r, 50));
    const [, card] = t.alertsOf('s1');
    expect(t.alertsOf('s1').map((a) => a.ruleId)).toEqual(['rul_refund', 'rul_card']);
    expect(card).toMatchObject({ condition: 'entity', final: true, match: { text: '4242 4242 4242 4242' } });
    expect(t.webhooks.map((w) => [w.type, w.data.ruleId, w.data.sessionId])).toEqual([
      ['alert.triggered', 'rul_refund', 's1'],
      ['alert.triggered', 'rul_card', 's1'],
    ]);
    const text = await t.metrics.registry.metrics();
    expect(text).toContain('scribed_rule_alerts_total{condition="entity"} 1');
    expect(text).toContain('scribed_rule_alerts_total{condition="phrases"} 1');
  });

  it("reads an account's rules again once they are invalidated", async () => {
    const rules = [ruleOf('rul_hi', { kind: 'phrases', phrases: ['hello'] }, { enabled: false })];
    const t = setup(rules, { s1: { callId: null, speaker: null } });
    t.send('s1', 1000, final('seg_0', 'hello there', [[0, 900]]));
    await vi.waitFor(() => expect(t.store.listRules).toHaveBeenCalledTimes(1));
    rules[0] = { ...rules[0]!, enabled: true };
    t.alerts.invalidate('acc_a');
    t.send('s1', 2000, final('seg_1', 'hello again', [[1000, 1900]]));
    await vi.waitFor(() => expect(t.alertsOf('s1')).toHaveLength(1));
    expect(t.alertsOf('s1')[0]!.segmentId).toBe('seg_1');
  });
});
