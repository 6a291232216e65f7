// Phrase spotting end to end (docs/analytics.md, "Phrase spotting") on the store under test:
// Asterisk's prompts (Allison Smith's 8 kHz studio recordings, Debian's
// asterisk-core-sounds-en-wav, the data set of bench/phrase-spotting.ts) streamed as one leg
// of a call through a real socket to the real recognizer. The recognizer garbles "pound key"
// and "followed by" in them; the keyphrase decoder the session runs beside it, because the
// account has rules and a category asking to spot those phrases, catches them: live alerts
// with source "spotted" and a category matched with the spotted times. A phrase never said
// raises nothing; an account without spotting runs no second decoder; bad spot fields are 422
// naming the field.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { createSession, streamAndClose } from '../helpers/live.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const STT = '/sound_clone/api/v1/stt';
const SOUNDS = '/usr/share/asterisk/sounds/en';
const RATE = 8000;

/** A prompt as 8 kHz samples (the files are 8 kHz mono WAV). */
function prompt(id: string): Int16Array {
  const raw = execFileSync('sox', [`${SOUNDS}/${id}.wav`, '-t', 'raw', '-r', String(RATE), '-e', 'signed', '-b', '16', '-c', '1', '-']);
  return new Int16Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
}

/** Prompts one after another, each followed by `gapMs` of silence; where each starts (ms). */
function leg(ids: string[], gapMs: number): { samples: Int16Array; startsMs: number[] } {
  const parts = ids.map(prompt);
  const gap = (gapMs * RATE) / 1000;
  const samples = new Int16Array(parts.reduce((n, p) => n + p.length + gap, 0));
  const startsMs: number[] = [];
  let at = 0;
  for (const p of parts) {
    startsMs.push((at * 1000) / RATE);
    samples.set(p, at);
    at += p.length + gap;
  }
  return { samples, startsMs };
}

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  if (!existsSync(`${SOUNDS}/conf-getchannel.wav`)) throw new Error('needs asterisk-core-sounds-en-wav (scripts/setup.sh installs it)');
  svc = await startService({ maxDecoders: 3 });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

const api = (method: string, url: string, body?: unknown, key = alice.accessKey) =>
  call(svc.baseUrl, method as 'GET', url, { key, ...(body === undefined ? {} : { body }) });

async function spottersOpened(): Promise<number> {
  const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
  const m = /^scribed_phrase_spotters_total\{outcome="opened"\} (\d+)/m.exec(text);
  return Number(m?.[1] ?? NaN);
}

describe('spot fields', () => {
  it('are refused with 422 naming the field: out of range, beside another condition, words without a pronunciation (PHRASE_NOT_SPOTTABLE)', async () => {
    for (const [url, body, field, code] of [
      [`${STT}/rules`, { name: 'r', phrases: ['pound key'], spot: true, spotThreshold: 0.5 }, 'spotThreshold'],
      [`${STT}/rules`, { name: 'r', phrases: ['pound key'], spotThreshold: 1e-10 }, 'spotThreshold'],
      [`${STT}/rules`, { name: 'r', pattern: 'pound', spot: true }, 'spot'],
      [`${STT}/rules`, { name: 'r', phrases: ['pound key', 'the zqxjv key'], spot: true }, 'phrases[1]', 'PHRASE_NOT_SPOTTABLE'],
      [
        `${STT}/categories`,
        { name: 'c', conditions: [{ phrases: ['pound key'], spot: true, spotThreshold: 1e-60 }] },
        'conditions[0].spotThreshold',
      ],
      [`${STT}/categories`, { name: 'c', conditions: [{ silenceSeconds: 5, spot: true }] }, 'conditions[0].spot'],
      [
        `${STT}/categories`,
        { name: 'c', conditions: [{ phrases: ['blorfquux'], spot: true }] },
        'conditions[0].phrases[0]',
        'PHRASE_NOT_SPOTTABLE',
      ],
    ] as Array<[string, unknown, string, string?]>) {
      const r = await api('POST', url, body);
      expect([r.status, r.json.message.split(':')[0]], JSON.stringify(r.json)).toEqual([422, code ?? 'VALIDATION_FAILED']);
      expect(r.json.message, JSON.stringify(body)).toContain(`${field}:`);
    }
    const ok = await api('POST', `${STT}/rules`, { name: 'tmp', phrases: ['Pound key!'], spot: true, spotThreshold: 1e-12 });
    expect(ok.status, JSON.stringify(ok.json)).toBe(201);
    expect(ok.json.data).toMatchObject({ condition: 'phrases', phrases: ['Pound key!'], spot: true, spotThreshold: 1e-12 });
    expect((await api('DELETE', `${STT}/rules/${ok.json.data.id}`)).status).toBe(200);
  });
});

describe('a leg of real speech whose transcript garbles the phrases', () => {
  it('alerts and matches them from the keyphrase decoder; a phrase never said raises nothing', async () => {
    const rule = async (name: string, phrases: string[], spot: boolean) => {
      const r = await api('POST', `${STT}/rules`, { name, phrases, ...(spot ? { spot: true } : {}) });
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      return r.json.data.id as string;
    };
    const rules = {
      poundKey: await rule('pound key', ['pound key'], true),
      followedBy: await rule('followed by', ['followed by'], true),
      never: await rule('never said', ['cancel my subscription'], true),
      plain: await rule('pound key, transcript only', ['pound key'], false),
    };
    const cat = await api('POST', `${STT}/categories`, {
      name: 'asks for the pound key',
      conditions: [{ phrases: ['pound key'], match: 'any', spot: true, speaker: 'ivr' }],
    });
    expect(cat.status, JSON.stringify(cat.json)).toBe(201);
    const catNever = await api('POST', `${STT}/categories`, {
      name: 'cancels',
      conditions: [{ phrases: ['cancel my subscription'], spot: true }],
    });
    expect(catNever.status).toBe(201);

    const { samples, startsMs } = leg(['conf-getchannel', 'agent-pass', 'conf-getconfno'], 1500);
    const created = await call(svc.baseUrl, 'POST', `${STT}/calls`, {
      key: alice.accessKey,
      body: { title: 'spotting' },
      headers: { 'Idempotency-Key': `spotting-${randomUUID()}` },
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const callId = created.json.data.callId as string;
    const opened = await spottersOpened();
    const s = await createSession(svc, alice.accessKey, { inputEncoding: 'pcm_s16le_8000' }, { callId, speaker: 'ivr' });
    const run = await streamAndClose(svc, alice.accessKey, s.streamUrl, samples, RATE);
    const heard = run.finals.map((f) => String(f.text).toLowerCase()).join(' | ');
    console.log('transcript:', heard);
    const alerts = run.client.ofType('alert') as Array<Record<string, any>>;
    console.log('alerts:', JSON.stringify(alerts.map((a) => [a.ruleName, a.source ?? 'transcript', a.startMs, a.endMs])));
    expect(await spottersOpened()).toBe(opened + 1);

    // The transcript garbles the phrases (the point of spotting): each prompt says both.
    const inTranscript = (p: string) => heard.split(p).length - 1;
    expect(inTranscript('pound key')).toBeLessThan(startsMs.length);
    const of = (ruleId: string) => alerts.filter((a) => a.ruleId === ruleId);
    const totalMs = (samples.length * 1000) / RATE;
    // Which prompt a detection falls in (its start inside the prompt or within 1 s after it:
    // the search's times can run late by up to about a second, docs/analytics.md).
    const promptOf = (a: Record<string, any>) =>
      startsMs.findIndex((st, k) => a.startMs >= st && a.startMs < (startsMs[k + 1] ?? totalMs + 1000));
    const caught = (ruleId: string) =>
      new Set(
        of(ruleId)
          .filter((a) => a.source === 'spotted')
          .map(promptOf),
      );
    const pound = of(rules.poundKey);
    console.log(
      `recall in this leg: "pound key" transcript ${inTranscript('pound key')}/3, spotted ${caught(rules.poundKey).size}/3; ` +
        `"followed by" transcript ${inTranscript('followed by')}/3, spotted ${caught(rules.followedBy).size}/3; false alarms ${of(rules.never).length}`,
    );
    for (const a of pound.filter((x) => x.source === 'spotted')) {
      expect(a).toMatchObject({ condition: 'phrases', text: 'pound key', speaker: 'ivr', callId, final: true });
      expect(a.endMs).toBeGreaterThan(a.startMs);
      expect(promptOf(a)).toBeGreaterThanOrEqual(0);
    }
    expect(caught(rules.poundKey).size).toBeGreaterThanOrEqual(1);
    expect(caught(rules.followedBy).size).toBeGreaterThanOrEqual(1);
    // Spotting adds to what the transcript finds: the transcript-only rule alerts only what the
    // transcript heard, the spotting rule more; a phrase never said alerts nothing.
    expect(of(rules.plain).length).toBe(inTranscript('pound key'));
    expect(pound.length).toBeGreaterThan(of(rules.plain).length);
    expect(of(rules.never)).toEqual([]);

    // The call's analytics: the category matched, with the spotted times; the other not.
    const got = await api('GET', `${STT}/calls/${callId}/analytics`);
    expect(got.status, JSON.stringify(got.json)).toBe(200);
    const m = (got.json.data.categories as Array<Record<string, any>>).find((c) => c.categoryId === cat.json.data.id);
    expect(m, JSON.stringify(got.json.data.categories)).toBeDefined();
    console.log('category:', JSON.stringify(m));
    expect(m!.hits.some((h: any) => h.spotted === true && h.text === 'pound key')).toBe(true);
    expect((got.json.data.categories as Array<Record<string, any>>).some((c) => c.categoryId === catNever.json.data.id)).toBe(false);

    // An account with nothing to spot runs no keyphrase decoder.
    const lone = await createSession(svc, bob.accessKey, { inputEncoding: 'pcm_s16le_8000' });
    const plain = await streamAndClose(svc, bob.accessKey, lone.streamUrl, prompt('conf-getchannel'), RATE);
    expect(plain.finals.length).toBeGreaterThan(0);
    expect(await spottersOpened()).toBe(opened + 1);
  }, 120_000);
});
