// A refused upload reads as its status, never as a broken connection: a server that answers
// (401 a wrong key, 404, a limit) before it has read the upload and then drops the connection
// while the client is still writing makes the client's write fail (EPIPE, a reset) before it
// reads the answer. Through the official SDKs on reused keep-alive connections, and with
// undici's fetch on the native upload route: every one of 20 wrong keys in a row is read as an
// authentication error, and the next good request on the same client still works.
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../helpers/service.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const SAMPLES = path.resolve(import.meta.dirname, '../../../samples');
/** A WAV of the clip repeated to `bytes`: larger than the loopback's socket buffers, so the
 * client is still writing when the answer comes. */
function bigWav(bytes: number): Buffer {
  const clip = fs.readFileSync(path.join(SAMPLES, 'librivox-0870.wav'));
  const pcm = clip.subarray(44);
  const body = Buffer.alloc(bytes - 44);
  for (let at = 0; at < body.length; at += pcm.length) pcm.copy(body, at, 0, Math.min(pcm.length, body.length - at));
  const head = Buffer.from(clip.subarray(0, 44));
  head.writeUInt32LE(bytes - 8, 4);
  head.writeUInt32LE(bytes - 44, 40);
  return Buffer.concat([head, body]);
}
const CLIENT = path.resolve(import.meta.dirname, '../../helpers/sdk/refused-uploads.mjs');
const execFileAsync = promisify(execFile);

function wavFile(bytes: number): string {
  const file = path.join(svc.dataDir, `big-${bytes}.wav`);
  if (!fs.existsSync(file)) fs.writeFileSync(file, bigWav(bytes));
  return file;
}
const ROUNDS = 20;

let svc: TestService;
let alice: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1 });
  alice = await svc.account(1_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

/** The SDK run in its own process; what each of its refused uploads was read as. */
async function runClient(sdk: 'openai' | 'deepgram' | 'deepgram-refused' | 'native', wav: string): Promise<unknown[]> {
  const args = JSON.stringify({ sdk, baseUrl: svc.baseUrl, goodKey: alice.accessKey, badKey: 'sk_not_a_key', wav, rounds: ROUNDS });
  const { stdout } = await execFileAsync(process.execPath, [CLIENT, args], { encoding: 'utf8', timeout: 100_000 });
  return JSON.parse(stdout.trim().split('\n').pop()!) as unknown[];
}

describe('a refused upload on a reused connection is read as its status', () => {
  for (const size of [50_000, 12 * 1024 * 1024]) {
    it(`openai SDK, ${size} bytes: ${ROUNDS} wrong keys in a row on one client are ${ROUNDS} AuthenticationErrors`, async () => {
      expect(await runClient('openai', wavFile(size))).toEqual(Array(ROUNDS).fill('AuthenticationError'));
    }, 120_000);
    it(`@deepgram/sdk, ${size} bytes: ${ROUNDS} wrong keys in a row on one client are ${ROUNDS} 401s`, async () => {
      expect(await runClient('deepgram', wavFile(size))).toEqual(Array(ROUNDS).fill(401));
    }, 120_000);
    it(`@deepgram/sdk, ${size} bytes: ${ROUNDS} refused options in a row are ${ROUNDS} 400s`, async () => {
      expect(await runClient('deepgram-refused', wavFile(size))).toEqual(Array(ROUNDS).fill(400));
    }, 120_000);
    it(`native batch upload (fetch), ${size} bytes: ${ROUNDS} wrong keys in a row on kept-alive connections are ${ROUNDS} 401s`, async () => {
      expect(await runClient('native', wavFile(size))).toEqual(Array(ROUNDS).fill('401 UNAUTHORIZED'));
    }, 120_000);
  }
});
