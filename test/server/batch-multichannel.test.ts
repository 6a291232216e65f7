// A stereo batch upload with options {"multichannel": true} becomes a call (issue 15,
// docs/calls.md "Stereo"): real speech, the agent on the left channel and the customer on the
// right, through a real server. Each leg's words equal those of its channel uploaded alone as
// a mono file; the merged transcript has each party's line, labelled, in time order; each
// channel is charged; validation refuses what cannot be split, before anything is charged.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { charactersDue } from '../../src/core/billing.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const CALLS = '/sound_clone/api/v1/stt/calls';
const clips = loadClips();
const agentClip = clips.find((c) => c.id === 'librivox-0870')!;
const customerClip = clips.find((c) => c.id === 'librivox-0920')!;

type Json = any;

let svc: TestService;
let alice: ProvisionedAccount;
const dir = tempDir('scribed-multichannel-');
/** A conversation: the agent speaks, then the customer answers; each channel is silent while
 * the other party speaks, as a call-center recording is. */
const files = { left: path.join(dir, 'agent.wav'), right: path.join(dir, 'customer.wav'), stereo: path.join(dir, 'call.wav') };

function sox(...args: string[]): void {
  execFileSync('sox', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

beforeAll(async () => {
  const gap = 0.5;
  sox(agentClip.wavFile, files.left, 'pad', '0', String(customerClip.durationSec + gap));
  sox(customerClip.wavFile, files.right, 'pad', String(agentClip.durationSec + gap), '0');
  sox('-M', files.left, files.right, files.stereo);
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function upload(file: string | Buffer, fields: Record<string, string>, key = alice.accessKey, headers: Record<string, string> = {}) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append(
    'file',
    new Blob([typeof file === 'string' ? fs.readFileSync(file) : file]),
    typeof file === 'string' ? path.basename(file) : 'upload.bin',
  );
  const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey: key, ...headers }, body: form });
  return { status: res.status, json: (await res.json()) as Json, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

async function get(p: string, key = alice.accessKey): Promise<{ status: number; json: Json; text: string }> {
  const res = await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: key } });
  const text = await res.text();
  let json: Json = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, json, text };
}

async function balance(key = alice.accessKey): Promise<bigint> {
  return BigInt((await get('/sound_clone/api/v1/account', key)).json.data.characters);
}

/** The recognizer's words of a JSON transcript's segments, in order. */
function words(segments: Json[]): string[] {
  return segments.flatMap((s: Json) =>
    String(s.rawText ?? s.text)
      .toLowerCase()
      .split(/\s+/)
      .filter(Boolean),
  );
}

async function monoWords(file: string): Promise<string[]> {
  const r = await upload(file, { options: JSON.stringify({ readableText: false }) });
  expect(r.status).toBe(200);
  await svc.service.batch.idle();
  const t = await get(`${TRANSCRIPTIONS}/${r.json.data.transcriptionId}/transcript?format=json`);
  return words(t.json.segments);
}

describe('multichannel batch upload', () => {
  it('makes a two-leg call whose per-speaker words equal each channel transcribed alone, merged in time order', async () => {
    const before = await balance();
    const r = await upload(files.stereo, { options: JSON.stringify({ multichannel: true, readableText: false }) });
    expect(r.status).toBe(200);
    const data = r.json.data;
    expect(data.callId).toMatch(/^call_/);
    expect(data.speaker).toBe('agent');
    expect(data.legs.map((l: Json) => l.speaker)).toEqual(['agent', 'customer']);
    expect(data.effectiveOptions.multichannel).toBe(true);
    expect(data.effectiveOptions.channelSpeakers).toEqual(['agent', 'customer']);
    // Each channel is charged for its own duration (both have the file's length).
    const seconds = agentClip.durationSec + customerClip.durationSec + 0.5;
    const perLeg = charactersDue(BigInt(Math.round(seconds * 16_000)), 16_000);
    expect(data.legs.map((l: Json) => BigInt(l.charactersCharged))).toEqual([perLeg, perLeg]);
    expect(BigInt(data.charactersCharged)).toBe(2n * perLeg);
    expect(before - (await balance())).toBe(2n * perLeg);

    await svc.service.batch.idle();
    const call = (await get(`${CALLS}/${data.callId}`)).json.data;
    expect(call.status).toBe('COMPLETED');
    expect(call.externalId).toBeNull();
    expect(call.title).toBe('call.wav'); // no title field: the file's name
    expect(call.legs.map((l: Json) => [l.speaker, l.kind, l.sessionId])).toEqual([
      ['agent', 'batch', null],
      ['customer', 'batch', null],
    ]);

    // History rows carry the call and the speaker.
    for (const leg of call.legs) {
      const row = (await get(`${TRANSCRIPTIONS}/${leg.transcriptionId}`)).json.data;
      expect(row.callId).toBe(data.callId);
      expect(row.speaker).toBe(leg.speaker);
      expect(row.title).toBe(`call.wav: ${leg.speaker}`);
    }

    const merged = (await get(`${CALLS}/${data.callId}/transcript?format=json`)).json;
    const agentWords = words(merged.segments.filter((s: Json) => s.speaker === 'agent'));
    const customerWords = words(merged.segments.filter((s: Json) => s.speaker === 'customer'));
    expect(agentWords.length).toBeGreaterThan(10);
    expect(customerWords.length).toBeGreaterThan(10);
    expect(agentWords).toEqual(await monoWords(files.left));
    expect(customerWords).toEqual(await monoWords(files.right));
    // Mixed down, the same file is one transcript of both voices: not what either party said.
    // The channels are separated, not just relabelled: the agent's words are the agent clip's.
    expect(agentWords.join(' ')).toContain('dashwood');
    expect(customerWords.join(' ')).toContain('amiable');

    // Time order: the agent's lines, then the customer's, on one clock.
    const starts = merged.segments.map((s: Json) => s.startMs);
    expect(starts).toEqual([...starts].sort((a: number, b: number) => a - b));
    const firstCustomer = merged.segments.find((s: Json) => s.speaker === 'customer' && s.text.trim() !== '');
    expect(firstCustomer.startMs).toBeGreaterThanOrEqual(agentClip.durationSec * 1000);
    const txt = (await get(`${CALLS}/${data.callId}/transcript?format=txt`)).text.trim().split('\n');
    expect(txt[0]).toMatch(/^\[00:00:0\d\.\d{3}\] agent: /);
    expect(txt[txt.length - 1]).toMatch(/\] customer: /);
    expect(txt.findIndex((l) => l.includes('] customer: '))).toBeGreaterThan(txt.findLastIndex((l) => l.includes('] agent: ')));
  }, 180_000);

  it('names the legs from channelSpeakers and keeps the title field as the call title', async () => {
    const r = await upload(files.stereo, {
      title: 'Support line 4',
      options: JSON.stringify({ multichannel: true, channelSpeakers: ['rep', 'caller'] }),
    });
    expect(r.status).toBe(200);
    expect(r.json.data.legs.map((l: Json) => l.speaker)).toEqual(['rep', 'caller']);
    const call = (await get(`${CALLS}/${r.json.data.callId}`)).json.data;
    expect(call.title).toBe('Support line 4');
    expect(call.legs.map((l: Json) => l.speaker)).toEqual(['rep', 'caller']);
    await svc.service.batch.idle();
  }, 120_000);

  it('answers a retry under the same Idempotency-Key with the same call, charged once', async () => {
    const key = `mc-${randomUUID()}`;
    const fields = { options: JSON.stringify({ multichannel: true }) };
    const first = await upload(files.stereo, fields, alice.accessKey, { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    const after = await balance();
    const again = await upload(files.stereo, fields, alice.accessKey, { 'Idempotency-Key': key });
    expect(again.status).toBe(200);
    expect(again.replayed).toBe(true);
    expect(again.json.data.callId).toBe(first.json.data.callId);
    expect(again.json.data.legs.map((l: Json) => l.transcriptionId)).toEqual(first.json.data.legs.map((l: Json) => l.transcriptionId));
    expect(await balance()).toBe(after);
    // Other speakers under the same key are another request.
    const other = await upload(
      files.stereo,
      { options: JSON.stringify({ multichannel: true, channelSpeakers: ['a', 'b'] }) },
      alice.accessKey,
      { 'Idempotency-Key': key },
    );
    expect(other.status).toBe(409);
    expect(other.json.message).toContain('IDEMPOTENCY_CONFLICT');
    await svc.service.batch.idle();
  }, 120_000);

  it('mixes a stereo file down without multichannel, as before, and says so in a notice', async () => {
    const r = await upload(files.stereo, {});
    expect(r.status).toBe(200);
    expect(r.json.data.callId).toBeNull();
    expect(r.json.data.legs).toBeUndefined();
    expect(r.json.data.notices.map((n: Json) => n.code)).toContain('CHANNELS_MIXED_DOWN');
    const mono = await upload(files.left, {});
    expect(mono.json.data.notices.map((n: Json) => n.code)).not.toContain('CHANNELS_MIXED_DOWN');
    await svc.service.batch.idle();
  }, 120_000);

  it('refuses what cannot be split with 422, charging nothing', async () => {
    const before = await balance();
    const cases: Array<[string | Buffer, Record<string, unknown>, string]> = [
      [files.left, { multichannel: true }, 'options.multichannel: the file has 1 channel'],
      [files.stereo, { multichannel: 'yes' }, 'options.multichannel: must be a boolean'],
      [files.stereo, { channelSpeakers: ['agent', 'customer'] }, 'options.channelSpeakers: applies only with options.multichannel: true'],
      [files.stereo, { multichannel: false, channelSpeakers: ['agent', 'customer'] }, 'options.channelSpeakers: applies only'],
      [files.stereo, { multichannel: true, channelSpeakers: ['agent'] }, 'options.channelSpeakers: must be an array of 2'],
      [files.stereo, { multichannel: true, channelSpeakers: 'agent,customer' }, 'options.channelSpeakers: must be an array of 2'],
      [files.stereo, { multichannel: true, channelSpeakers: ['agent', 'agent'] }, 'options.channelSpeakers: must name a different speaker'],
      [files.stereo, { multichannel: true, channelSpeakers: ['agent', 'bad speaker'] }, 'options.channelSpeakers[1]: must match'],
      // The other options are still validated as a session's.
      [files.stereo, { multichannel: true, noSuchOption: 1 }, 'noSuchOption'],
    ];
    for (const [file, options, message] of cases) {
      const r = await upload(file, { options: JSON.stringify(options) });
      expect(r.status, JSON.stringify(options)).toBe(422);
      expect(r.json.message).toContain('VALIDATION_FAILED');
      expect(r.json.message).toContain(message);
    }
    expect(await balance()).toBe(before);
  }, 60_000);

  it('refuses a multichannel upload the balance pays for one channel of, whole', async () => {
    const seconds = agentClip.durationSec + customerClip.durationSec + 0.5;
    const poor = await svc.account(BigInt(Math.ceil(seconds) + 2));
    const r = await upload(files.stereo, { options: JSON.stringify({ multichannel: true }) }, poor.accessKey);
    expect(r.status).toBe(402);
    expect(r.json.message).toContain('INSUFFICIENT_CHARACTERS');
    expect(await balance(poor.accessKey)).toBe(BigInt(Math.ceil(seconds) + 2));
    expect((await get(CALLS, poor.accessKey)).json.data.items).toEqual([]);
  }, 60_000);
});
