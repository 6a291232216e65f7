// `scribed accounts set-redaction` as an operator runs it, on the store of a running server:
// the default is stored, then every new session (native and Deepgram live) and batch job of
// the account gets it, a request adding policies but never removing one; `none` clears it;
// bad names and unknown accounts are refused.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondConnection, startService, storeArgsFor, type TestService } from '../helpers/service.js';
import { CLI } from '../helpers/serve-process.js';
import { createSession } from '../helpers/live.js';
import { tone } from '../helpers/fake-engine.js';

const run = promisify(execFile);
const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
let svc: TestService;

beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.stop();
});

async function setRedaction(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, 'accounts', 'set-redaction', ...args, ...(await storeArgsFor(svc.dataDir))]);
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A one-second WAV of a tone (16 kHz). */
function wav(): Blob {
  const pcm = tone(16000, 1);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + pcm.byteLength, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(16000, 24);
  header.writeUInt32LE(32000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(pcm.byteLength, 40);
  return new Blob([header, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength)]);
}

async function batchOptions(key: string, options: Record<string, unknown>): Promise<Record<string, unknown>> {
  const form = new FormData();
  form.append('options', JSON.stringify(options));
  form.append('file', wav(), 'tone.wav');
  const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, {
    method: 'POST',
    headers: { accessKey: key, 'Idempotency-Key': randomUUID() },
    body: form,
  });
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.data.effectiveOptions as Record<string, unknown>;
}

describe('scribed accounts set-redaction', () => {
  it('sets the default every new session and batch job gets; a request adds to it, never removes; none clears it', async () => {
    const acct = await svc.account(10_000n);
    expect(JSON.parse((await setRedaction(['--account', acct.accountId])).stdout)).toEqual({ accountId: acct.accountId, redact: [] });
    expect((await createSession(svc, acct.accessKey, {})).effectiveOptions.redact).toBeUndefined();

    expect(JSON.parse((await setRedaction(['--account', acct.accountId, '--redact', 'pci, numbers'])).stdout)).toEqual({
      accountId: acct.accountId,
      redact: ['pci', 'numbers'],
    });
    const store = await secondConnection(svc);
    try {
      expect(await store.getRedactionDefault(acct.accountId)).toMatchObject({ accountId: acct.accountId, policies: ['pci', 'numbers'] });
    } finally {
      await store.close();
    }
    expect((await createSession(svc, acct.accessKey, {})).effectiveOptions.redact).toEqual(['pci', 'numbers']);
    expect((await createSession(svc, acct.accessKey, { redact: ['email'] })).effectiveOptions.redact).toEqual(['email', 'pci', 'numbers']);
    expect((await createSession(svc, acct.accessKey, { redact: [] })).effectiveOptions.redact).toEqual(['pci', 'numbers']);
    expect((await batchOptions(acct.accessKey, {})).redact).toEqual(['pci', 'numbers']);
    expect((await batchOptions(acct.accessKey, { redact: ['ssn'] })).redact).toEqual(['ssn', 'pci', 'numbers']);
    // Another account is not touched.
    const other = await svc.account(10_000n);
    expect((await createSession(svc, other.accessKey, {})).effectiveOptions.redact).toBeUndefined();

    expect(JSON.parse((await setRedaction(['--account', acct.accountId, '--redact', 'none'])).stdout)).toEqual({
      accountId: acct.accountId,
      redact: [],
    });
    expect((await createSession(svc, acct.accessKey, {})).effectiveOptions.redact).toBeUndefined();
  }, 60_000);

  it('refuses an unknown policy and an unknown account', async () => {
    const acct = await svc.account(0n);
    const bad = await setRedaction(['--account', acct.accountId, '--redact', 'pci,pii']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--redact: "pii" is not a policy/);
    const unknown = await setRedaction(['--account', 'acc_nope', '--redact', 'pci']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/NOT_FOUND/);
  }, 60_000);
});
