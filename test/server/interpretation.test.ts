// Interpretation projects through HTTP against a real server: create and read, ownership,
// the retry plan, and the retry with the spec's codes (47110, 47111, 47117, 47118),
// replays and concurrent duplicates.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const PROJECTS = '/sound_clone/api/v1/interpretation/projects';
let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;
let clockMs = Date.parse('2026-11-23T10:00:00Z');

beforeAll(async () => {
  svc = await startService({ now: () => new Date(clockMs) });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
});
afterAll(async () => {
  await svc?.stop();
});

const api = (method: string, path: string, opts: Parameters<typeof call>[3] = {}) =>
  call(svc.baseUrl, method, path, { key: alice.accessKey, ...opts });
const balance = async (who: ProvisionedAccount) => BigInt((await svc.service.store.getAccount(who.accountId))!.characters);
const idem = () => `retry-${randomUUID()}`;

async function createProject(
  who = alice,
  body: unknown = { title: 'Talk', sourceLanguage: 'en', targetLanguages: ['fr', 'ja'], source: { text: 'x'.repeat(300) } },
) {
  const r = await api('POST', PROJECTS, { key: who.accessKey, body });
  expect(r.status).toBe(200);
  return r.json.data;
}

/** A project whose first target a worker failed (what `interpretation fail-target` does). */
async function failedTarget(who = alice) {
  const project = await createProject(who);
  const target = project.targets[0];
  await svc.service.store.transitionInterpretationTarget(target.targetId, 'FAILED_RELEASED', new Date(clockMs));
  return { projectId: project.projectId as string, targetId: target.targetId as string, target };
}

async function plan(projectId: string, targetId: string, who = alice) {
  return api('GET', `${PROJECTS}/${projectId}/targets/${targetId}/retry-plan`, { key: who.accessKey });
}

function retry(projectId: string, targetId: string, body: unknown, key: string | null = idem(), who = alice) {
  return api('POST', `${PROJECTS}/${projectId}/targets/${targetId}/retry`, {
    key: who.accessKey,
    body,
    headers: key === null ? {} : { 'Idempotency-Key': key },
  });
}

function planBody(data: any) {
  return { nextReservationCycle: data.nextReservationCycle, characters: data.characters, rateVersion: data.rateVersion };
}

describe('interpretation projects', () => {
  it('creates QUEUED targets with ip_/it_/ia_ ids and reserves the first cycle of each', async () => {
    const before = await balance(alice);
    const p = await createProject();
    expect(p.projectId).toMatch(/^ip_/);
    expect(p.title).toBe('Talk');
    expect(p.targets.map((t: any) => t.language)).toEqual(['fr', 'ja']);
    for (const t of p.targets) {
      expect(t.targetId).toMatch(/^it_/);
      expect(t.generationId).toMatch(/^ia_/);
      expect(t.state).toBe('QUEUED');
      expect(t.reservationCycle).toBe(1);
    }
    // 300 code points: fr at 100% = 300, ja at 150% = 450
    expect(p.targets.map((t: any) => t.reservedCharacters)).toEqual(['300', '450']);
    expect(await balance(alice)).toBe(before - 750n);
  });

  it('reads a project with current target states', async () => {
    const { projectId, targetId } = await failedTarget();
    const r = await api('GET', `${PROJECTS}/${projectId}`);
    expect(r.json.code).toBe(1);
    expect(r.json.data.targets.find((t: any) => t.targetId === targetId)).toMatchObject({
      state: 'FAILED_RELEASED',
      reservedCharacters: '0',
    });
  });

  it("reads another account's project as not found", async () => {
    const p = await createProject();
    const r = await api('GET', `${PROJECTS}/${p.projectId}`, { key: bob.accessKey });
    expect(r.status).toBe(404);
    expect(r.json.code).toBe(-1);
  });

  it('refuses a target list that includes the source language', async () => {
    const r = await api('POST', PROJECTS, { body: { title: 'T', sourceLanguage: 'en', targetLanguages: ['en'] } });
    expect(r.status).toBe(422);
    expect(r.json.message).toMatch(/^VALIDATION_FAILED: targetLanguages/);
  });

  it('refuses without an access key', async () => {
    const r = await api('POST', PROJECTS, { key: null, body: { title: 'T', sourceLanguage: 'en', targetLanguages: ['fr'] } });
    expect(r.status).toBe(401);
  });
});

describe('create body size', () => {
  const LIMIT = 1.25 * 1024 * 1024; // INTERPRETATION_CREATE_BODY_LIMIT_BYTES, docs/api.md
  const post = (who: ProvisionedAccount, raw: string) =>
    api('POST', PROJECTS, { key: who.accessKey, rawBody: raw, headers: { 'content-type': 'application/json' } });
  const escapeAll = (s: string) => s.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

  it('takes source.text of 100,000 CJK code points (300,000 bytes of UTF-8, over the app-wide 256 KiB)', async () => {
    const rich = await svc.account(1_000_000n);
    const raw = JSON.stringify({ title: 'CJK', sourceLanguage: 'ja', targetLanguages: ['en'], source: { text: '語'.repeat(100_000) } });
    expect(Buffer.byteLength(raw)).toBeGreaterThan(256 * 1024);
    const r = await post(rich, raw);
    expect(r.status, r.text.slice(0, 200)).toBe(200);
    expect(r.json.data.targets[0].reservedCharacters).toBe('100000');
  });

  it('takes the largest legal body: every code point a \\u-escaped surrogate pair, 10 targets', async () => {
    const rich = await svc.account(2_000_000n);
    const targets = ['en', 'fr', 'de', 'es', 'pt-BR', 'it', 'nl', 'sv', 'pl', 'zh-Hans'];
    const raw = escapeAll(
      JSON.stringify({
        title: '😀'.repeat(200),
        sourceLanguage: 'yue-Hant',
        targetLanguages: targets,
        source: { text: '😀'.repeat(100_000) },
      }),
    );
    expect(Buffer.byteLength(raw)).toBeGreaterThan(1_200_000);
    expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(LIMIT);
    const r = await post(rich, raw);
    expect(r.status, r.text.slice(0, 200)).toBe(200);
    expect(r.json.data.targets).toHaveLength(10);
  });

  it('reads a body of exactly the route limit (then 422: too many code points) and refuses one byte more with 413, reserving nothing', async () => {
    const rich = await svc.account(1_000_000n);
    const head = '{"title":"Big","sourceLanguage":"en","targetLanguages":["fr"],"source":{"text":"';
    const body = (bytes: number) => head + 'a'.repeat(bytes - head.length - 3) + '"}}';
    expect(Buffer.byteLength(body(LIMIT))).toBe(LIMIT);
    const atLimit = await post(rich, body(LIMIT));
    expect(atLimit.status).toBe(422);
    expect(atLimit.json.message).toMatch(/^VALIDATION_FAILED: source.text/);
    const r = await post(rich, body(LIMIT + 1));
    expect(r.status).toBe(413);
    expect(r.json.message).toMatch(/^PAYLOAD_TOO_LARGE: /);
    expect(await balance(rich)).toBe(1_000_000n);
  });

  it('keeps the app-wide 256 KiB limit on other interpretation routes', async () => {
    const { projectId, targetId } = await failedTarget();
    const r = await retry(projectId, targetId, { pad: 'a'.repeat(256 * 1024) });
    expect(r.status).toBe(413);
  });
});

describe('retry plan', () => {
  it('quotes the next cycle at the current rate for a failed target, and repeats it until it expires', async () => {
    const { projectId, targetId } = await failedTarget();
    const r = await plan(projectId, targetId);
    expect(r.status).toBe(200);
    expect(r.json.data).toMatchObject({ targetId, nextReservationCycle: 2, characters: 300, rateVersion: '2026-11-01' });
    expect(Date.parse(r.json.data.expiresAt)).toBe(clockMs + 15 * 60 * 1000);
    const again = await plan(projectId, targetId);
    expect(again.json.data).toEqual(r.json.data);
  });

  it('answers HEAD with 405 and issues no plan', async () => {
    const { projectId, targetId } = await failedTarget();
    const h = await fetch(`${svc.baseUrl}${PROJECTS}/${projectId}/targets/${targetId}/retry-plan`, {
      method: 'HEAD',
      headers: { accessKey: alice.accessKey },
    });
    expect(h.status).toBe(405);
    expect(h.headers.get('allow')).toBe('GET');
    // A plan stored by the HEAD would be handed out again with its earlier expiry.
    clockMs += 60_000;
    const r = await plan(projectId, targetId);
    expect(r.json.data.expiresAt).toBe(new Date(clockMs + 15 * 60_000).toISOString());
  });

  it('refuses a target that is not FAILED_RELEASED with 47118', async () => {
    const p = await createProject();
    const r = await plan(p.projectId, p.targets[0].targetId);
    expect(r.status).toBe(409);
    expect(r.json.code).toBe(47118);
  });

  it("answers 47117 for another account's target", async () => {
    const { projectId, targetId } = await failedTarget();
    const r = await plan(projectId, targetId, bob);
    expect(r.json.code).toBe(47117);
  });
});

describe('retry', () => {
  it('moves the target to QUEUED, reserves the plan for its cycle, and returns the spec result', async () => {
    const { projectId, targetId, target } = await failedTarget();
    const p = (await plan(projectId, targetId)).json.data;
    const before = await balance(alice);
    const r = await retry(projectId, targetId, planBody(p));
    expect(r.status).toBe(200);
    expect(r.json.code).toBe(1);
    const d = r.json.data;
    expect(d).toMatchObject({
      targetId,
      language: 'fr',
      generationId: target.generationId,
      state: 'QUEUED',
      reservationCycle: 2,
      reservedCharacters: '300',
    });
    expect(typeof d.reservedCharacters).toBe('string');
    expect(typeof d.message).toBe('string');
    expect(d.requestId).toMatch(/^req_/);
    expect(await balance(alice)).toBe(before - 300n);
    const read = await api('GET', `${PROJECTS}/${projectId}`);
    expect(read.json.data.targets[0]).toMatchObject({ state: 'QUEUED', reservationCycle: 2, reservedCharacters: '300' });
  });

  it('replays the stored result for the same key and body without charging again', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const key = idem();
    const first = await retry(projectId, targetId, body, key);
    const after = await balance(alice);
    const second = await retry(projectId, targetId, body, key);
    expect(second.status).toBe(200);
    expect(second.json.data).toEqual(first.json.data);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await balance(alice)).toBe(after);
  });

  it('charges once for concurrent duplicates with the same key', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const before = await balance(alice);
    const key = idem();
    const all = await Promise.all(Array.from({ length: 8 }, () => retry(projectId, targetId, body, key)));
    expect(all.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(all.map((r) => r.json.data.requestId)).size).toBe(1);
    expect(await balance(alice)).toBe(before - 300n);
  });

  it('charges once for concurrent retries under different keys; the rest get 47118', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const before = await balance(alice);
    const all = await Promise.all(Array.from({ length: 6 }, () => retry(projectId, targetId, body)));
    expect(all.filter((r) => r.json.code === 1)).toHaveLength(1);
    expect(all.filter((r) => r.json.code === 47118)).toHaveLength(5);
    expect(await balance(alice)).toBe(before - 300n);
  });

  it('answers 47111 for a key reused with a different body', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const key = idem();
    await retry(projectId, targetId, body, key);
    const r = await retry(projectId, targetId, { ...body, characters: body.characters + 1 }, key);
    expect(r.status).toBe(409);
    expect(r.json.code).toBe(47111);
  });

  it('answers 47118 for characters that differ from the plan, and charges nothing', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const before = await balance(alice);
    const r = await retry(projectId, targetId, { ...body, characters: body.characters - 1 });
    expect(r.json.code).toBe(47118);
    expect(await balance(alice)).toBe(before);
  });

  it('answers 47118 for a stale reservation cycle', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const r = await retry(projectId, targetId, { ...body, nextReservationCycle: 1 });
    expect(r.json.code).toBe(47118);
  });

  it('answers 47118 for another rateVersion', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const r = await retry(projectId, targetId, { ...body, rateVersion: '2025-01-01' });
    expect(r.json.code).toBe(47118);
  });

  it('answers 47118 once the plan expired, and a new plan then works', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    clockMs += 15 * 60 * 1000;
    try {
      expect((await retry(projectId, targetId, body)).json.code).toBe(47118);
      const fresh = planBody((await plan(projectId, targetId)).json.data);
      expect((await retry(projectId, targetId, fresh)).json.code).toBe(1);
    } finally {
      clockMs += 1000;
    }
  });

  it('answers 47118 for a target that is not FAILED_RELEASED', async () => {
    const p = await createProject();
    const r = await retry(p.projectId, p.targets[0].targetId, { nextReservationCycle: 2, characters: 300, rateVersion: '2026-11-01' });
    expect(r.json.code).toBe(47118);
  });

  it('answers 47110 when the account lacks the Characters, and charges nothing', async () => {
    const poor = await svc.account(800n);
    const { projectId, targetId } = await failedTarget(poor); // reserves 750, releases 300: 350 left
    const body = planBody((await plan(projectId, targetId, poor)).json.data);
    await svc.service.store.debitCharacters(poor.accountId, 100n, 'test_spend', null); // 250 < 300
    const r = await retry(projectId, targetId, body, idem(), poor);
    expect(r.status).toBe(402);
    expect(r.json.code).toBe(47110);
    expect(await balance(poor)).toBe(250n);
  });

  it("answers 47117 for another account's target", async () => {
    const { projectId, targetId } = await failedTarget();
    const r = await retry(projectId, targetId, { nextReservationCycle: 2, characters: 300, rateVersion: '2026-11-01' }, idem(), bob);
    expect(r.status).toBe(404);
    expect(r.json.code).toBe(47117);
  });

  it('answers 47117 for a target of another project', async () => {
    const { targetId } = await failedTarget();
    const other = await createProject();
    const r = await retry(other.projectId, targetId, { nextReservationCycle: 2, characters: 300, rateVersion: '2026-11-01' });
    expect(r.json.code).toBe(47117);
  });

  it('answers 47117 for a missing target', async () => {
    const p = await createProject();
    const r = await retry(p.projectId, 'it_00000000000000000000', { nextReservationCycle: 2, characters: 300, rateVersion: '2026-11-01' });
    expect(r.json.code).toBe(47117);
  });

  it('accepts Idempotency-Keys of 16 and 64 characters and refuses 15, 65 and non-ASCII', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    for (const bad of ['k'.repeat(15), 'k'.repeat(65)]) {
      const r = await retry(projectId, targetId, body, bad);
      expect(r.status, bad).toBe(400);
      expect(r.json.message).toMatch(/^IDEMPOTENCY_KEY_REQUIRED/);
    }
    expect((await retry(projectId, targetId, body, null)).status).toBe(400);
    const nonAscii = await fetch(`${svc.baseUrl}${PROJECTS}/${projectId}/targets/${targetId}/retry`, {
      method: 'POST',
      headers: {
        accessKey: alice.accessKey,
        'content-type': 'application/json',
        'Idempotency-Key': Buffer.from('é'.repeat(16), 'latin1').toString('latin1'),
      },
      body: JSON.stringify(body),
    }).catch(() => null);
    if (nonAscii) expect(nonAscii.status).toBe(400);
    expect((await retry(projectId, targetId, body, `${'a'.repeat(15)}${randomUUID().slice(0, 1)}`)).json.code).toBe(1);
    const { projectId: p2, targetId: t2 } = await failedTarget();
    const body2 = planBody((await plan(p2, t2)).json.data);
    expect((await retry(p2, t2, body2, `${randomUUID()}${randomUUID()}`.slice(0, 64))).json.code).toBe(1);
  });

  it('counts retries by outcome in /metrics', async () => {
    const { projectId, targetId } = await failedTarget();
    const body = planBody((await plan(projectId, targetId)).json.data);
    const key = idem();
    await retry(projectId, targetId, body, key);
    await retry(projectId, targetId, body, key);
    const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(text).toMatch(/scribed_interpretation_retries_total\{outcome="retried"\} [1-9]/);
    expect(text).toMatch(/scribed_interpretation_retries_total\{outcome="replayed"\} [1-9]/);
  });

  it('refuses a body missing a plan field', async () => {
    const { projectId, targetId } = await failedTarget();
    const r = await retry(projectId, targetId, { nextReservationCycle: 2, characters: 300 });
    expect(r.status).toBe(422);
    expect(r.json.message).toMatch(/rateVersion/);
  });
});
