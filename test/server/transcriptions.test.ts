// History rows read by id: an `rts_` (session) id gets a 404 whose message says how to find
// the session's transcription, the same whether the session exists, is another account's or
// never was.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService();
  alice = await svc.account(500n);
  bob = await svc.account();
});
afterAll(async () => {
  await svc?.stop();
});

const API = '/sound_clone/api/v1/stt';

async function get(path: string, key: string) {
  const res = await fetch(`${svc.baseUrl}${path}`, { headers: { accessKey: key } });
  return { status: res.status, json: (await res.json()) as { code: number; message: string; data: unknown } };
}

describe('a transcription read with a session id', () => {
  it('is 404 NOT_FOUND naming the session transcriptionId, alike for a real, a foreign and an unknown session', async () => {
    const created = await fetch(`${svc.baseUrl}${API}/realtime/sessions`, {
      method: 'POST',
      headers: { accessKey: alice.accessKey, 'Idempotency-Key': `test-${randomUUID()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Call', options: { inputEncoding: 'mulaw_8000' } }),
    });
    const session = ((await created.json()) as { data: { sessionId: string; transcriptionId: string } }).data;
    const unknown = 'rts_00000000000000000000';
    const answers = [];
    for (const [id, key] of [
      [session.sessionId, alice.accessKey],
      [session.sessionId, bob.accessKey],
      [unknown, alice.accessKey],
    ] as const) {
      for (const suffix of ['', '/transcript', '/transcript?format=txt']) {
        const r = await get(`${API}/transcriptions/${id}${suffix}`, key);
        expect(r.status).toBe(404);
        expect(r.json.code).toBe(-1); // NOT_FOUND
        expect(r.json.message).toContain(`${id} is a real-time session id`);
        expect(r.json.message).toContain('transcriptionId');
        expect(r.json.message).toContain(`GET ${API}/realtime/sessions/{sessionId}`);
        answers.push(JSON.stringify(r.json).replaceAll(id, 'ID'));
      }
    }
    // Nothing in the answer tells a real session from an unknown or a foreign one.
    expect(new Set(answers).size).toBe(1);
    // The hint names the way that works: the session's transcriptionId reads the row.
    const s = await get(`${API}/realtime/sessions/${session.sessionId}`, alice.accessKey);
    const tid = (s.json.data as { transcriptionId: string }).transcriptionId;
    expect(tid).toBe(session.transcriptionId);
    expect((await get(`${API}/transcriptions/${tid}`, alice.accessKey)).status).toBe(200);
  });

  it('an unknown transcription id keeps the plain message', async () => {
    const r = await get(`${API}/transcriptions/stt_00000000000000000000`, alice.accessKey);
    expect(r.status).toBe(404);
    expect(r.json.code).toBe(-1); // NOT_FOUND
    expect(r.json.message).not.toContain('real-time session');
  });
});
