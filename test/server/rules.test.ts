// Live rules against a real server, the real recognizer and real speech (docs/rules.md), on
// the store under test: CRUD per account (another account's rule is not found, limits and
// validation with the error table's codes); a phrase rule fires within 500 ms of the final
// that holds the phrase, as an `alert` on the stream socket and on a watcher's, and as an
// `alert.triggered` webhook; a silence rule fires on the speech after a long silence; a
// catastrophic pattern is taken (RE2) and runs bounded beside them; disabled rules, rules
// scoped to another speaker and another account's rules do not fire; the count is in /metrics.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { createSession } from '../helpers/live.js';
import { StreamClient, type StreamEvent } from '../helpers/stream-client.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const RULES = '/sound_clone/api/v1/stt/rules';
// "he was not an ill disposed young man"; after 2 s of silence the recognizer hears "He was not an illness those young men".
const clip = loadClips().find((c) => c.id === 'librivox-0880')!;

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;
const hooks: Array<{ type: string; data: Record<string, any> }> = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    hooks.push(JSON.parse(body) as { type: string; data: Record<string, any> });
    res.end('ok');
  });
});

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  svc = await startService({ maxDecoders: 2, callbackAllowPrivate: true, callbackAllowCidrs: ['127.0.0.1/32'] });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
  await new Promise<void>((r) => receiver.close(() => r()));
});

const rule = (body: unknown, key = alice.accessKey) => call(svc.baseUrl, 'POST', RULES, { key, body });

describe('the rules API', () => {
  it("creates, lists, reads, changes and deletes an account's rules; another account's read as not found", async () => {
    const created = await rule({ name: 'cancellation', phrases: ['cancel my subscription'], speaker: 'customer' });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const r = created.json.data;
    expect(r).toMatchObject({
      name: 'cancellation',
      condition: 'phrases',
      phrases: ['cancel my subscription'],
      speaker: 'customer',
      partials: false,
      enabled: true,
    });
    expect(r.id).toMatch(/^rul_/);
    expect((await call(svc.baseUrl, 'GET', `${RULES}/${r.id}`, { key: alice.accessKey })).json.data).toEqual(r);
    expect((await call(svc.baseUrl, 'GET', RULES, { key: alice.accessKey })).json.data.rules.map((x: any) => x.id)).toContain(r.id);
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { enabled: false }],
      ['DELETE', undefined],
    ] as const) {
      const other = await call(svc.baseUrl, method, `${RULES}/${r.id}`, { key: bob.accessKey, ...(body ? { body } : {}) });
      expect(other.status, method).toBe(404);
      expect(other.json.message).toMatch(/^NOT_FOUND/);
    }
    expect((await call(svc.baseUrl, 'GET', RULES, { key: bob.accessKey })).json.data.rules).toEqual([]);
    const patched = await call(svc.baseUrl, 'PATCH', `${RULES}/${r.id}`, {
      key: alice.accessKey,
      body: { pattern: 'refund(ed)?', caseSensitive: true, speaker: null },
    });
    expect(patched.status, JSON.stringify(patched.json)).toBe(200);
    expect(patched.json.data).toMatchObject({ condition: 'pattern', pattern: 'refund(ed)?', caseSensitive: true, speaker: null });
    expect(patched.json.data.phrases).toBeUndefined();
    expect((await call(svc.baseUrl, 'DELETE', `${RULES}/${r.id}`, { key: alice.accessKey })).json.data).toEqual({
      id: r.id,
      deleted: true,
    });
    expect((await call(svc.baseUrl, 'GET', `${RULES}/${r.id}`, { key: alice.accessKey })).status).toBe(404);
  });

  it('refuses malformed rules with VALIDATION_FAILED, patterns RE2 does not run with RULE_PATTERN_INVALID, the 51st with RULE_LIMIT', async () => {
    const bad = await rule({ name: 'two', phrases: ['a'], silenceSeconds: 5 });
    expect([bad.status, bad.json.message.split(':')[0]]).toEqual([422, 'VALIDATION_FAILED']);
    expect(bad.json.message).toContain('silenceSeconds');
    const backref = await rule({ name: 'backref', pattern: '(a)\\1' });
    expect([backref.status, backref.json.message.split(':')[0]]).toEqual([422, 'RULE_PATTERN_INVALID']);
    const lookahead = await rule({ name: 'lookahead', pattern: 'cancel(?= now)' });
    expect(lookahead.status).toBe(422);
    const carol = await svc.account();
    for (let i = 0; i < 50; i++) expect((await rule({ name: `r${i}`, phrases: [`word${i}`] }, carol.accessKey)).status).toBe(201);
    const over = await rule({ name: 'one more', phrases: ['x'] }, carol.accessKey);
    expect([over.status, over.json.message.split(':')[0]]).toEqual([409, 'RULE_LIMIT']);
  });
});

describe('rules on a live session with real speech', () => {
  it('alerts on the socket, the watcher and the webhook within 500 ms of the final; silence too; others stay quiet', async () => {
    const endpoint = await call(svc.baseUrl, 'POST', '/sound_clone/api/v1/webhooks/endpoints', {
      key: alice.accessKey,
      body: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['alert.triggered'] },
    });
    expect(endpoint.status, JSON.stringify(endpoint.json)).toBe(201);
    const phrase = (await rule({ name: 'was not', phrases: ['nobody said this', 'was not'] })).json.data;
    const silence = (await rule({ name: 'long silence', silenceSeconds: 1.5 })).json.data;
    const catastrophic = (await rule({ name: 'catastrophic', pattern: '(a+)+$' })).json.data;
    expect(catastrophic.id).toMatch(/^rul_/);
    await rule({ name: 'disabled', phrases: ['was not'], enabled: false });
    await rule({ name: 'agents only', phrases: ['was not'], speaker: 'agent' });
    await rule({ name: "bob's", phrases: ['was not'] }, bob.accessKey);

    const s = await createSession(svc, alice.accessKey, { inputEncoding: 'pcm_s16le_16000' });
    const c = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: alice.accessKey });
    const watcher = await StreamClient.connect(`${svc.wsBase}/sound_clone/api/v1/stt/realtime/sessions/${s.sessionId}/events`, {
      accessKey: alice.accessKey,
    });
    const arrived = new Map<StreamEvent | string, number>();
    c.ws.on('message', () => arrived.set(c.events[c.events.length - 1]!, performance.now()));
    await c.next('ready');
    // 2 s of silence, then the sentence: the silence rule sees its first word start past 1.5 s.
    const audio = Buffer.concat([Buffer.alloc(2 * 16000 * 2), clip.pcm16k]);
    let offset = 0;
    for (const f of chunks(audio, 2, 320)) {
      c.audio(1, offset, f);
      offset += f.length / 2;
    }
    await c.next('ack', (e) => e.sampleOffset === offset, 60_000);
    c.control({ type: 'commit' });
    const final = await c.next('final', () => true, 60_000);
    expect(final.text).toMatch(/was not/i);
    const alert = await c.next('alert', (e) => e.ruleId === phrase.id, 5_000);
    const latencyMs = arrived.get(alert)! - arrived.get(final)!;
    console.log(`rule alert ${latencyMs.toFixed(1)} ms after its final (${process.env.SCRIBED_TEST_STORE ?? 'sqlite'})`);
    expect(latencyMs).toBeLessThan(500);
    expect(alert).toMatchObject({
      ruleName: 'was not',
      condition: 'phrases',
      segmentId: final.segmentId,
      final: true,
      text: final.text,
      speaker: null,
      callId: null,
    });
    expect(alert.match.text).toMatch(/^was not$/i);
    expect(final.text.slice(alert.match.start, alert.match.end)).toBe(alert.match.text);
    const quiet = await c.next('alert', (e) => e.ruleId === silence.id, 5_000);
    expect(quiet.condition).toBe('silence');
    expect(quiet.startMs).toBe(0);
    expect(quiet.endMs).toBeGreaterThan(1500);
    c.control({ type: 'commit' });
    await c.next('committed', (e) => e.segmentId === null, 10_000);
    // Only these two fired: not the disabled rule, the agents' rule, bob's, nor the (a+)+$ pattern.
    expect(
      c
        .ofType('alert')
        .map((e) => e.ruleId)
        .sort(),
    ).toEqual([phrase.id, silence.id].sort());
    const watched = await watcher.next('alert', (e) => e.ruleId === phrase.id, 5_000);
    expect(watched).toEqual(alert);

    const deadline = Date.now() + 15_000;
    while (hooks.filter((h) => h.data.sessionId === s.sessionId).length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const hook = hooks.find((h) => h.data.alertId === alert.alertId);
    expect(hook).toMatchObject({
      type: 'alert.triggered',
      data: { ruleId: phrase.id, sessionId: s.sessionId, transcriptionId: s.transcriptionId, segmentId: final.segmentId },
    });
    expect(hook!.data.links.rule).toBe(`${RULES}/${phrase.id}`);

    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/scribed_rule_alerts_total\{condition="phrases"\} [1-9]/);
    expect(metrics).toMatch(/scribed_rule_alerts_total\{condition="silence"\} [1-9]/);
    c.control({ type: 'close' });
    await c.next('closed', () => true, 30_000);
    watcher.close();
  }, 120_000);
});
