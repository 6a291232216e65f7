// The access-key file of `scribed rtp` and `scribed stream`, as operators write them: a key
// followed by a comment line works (only the first line is the key), and a malformed key is
// refused at start with exit 2, never retried and never printed.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { packetize, RtpTestSender } from '../helpers/rtp.js';
import { createAccount, freePort, serve, spawnCli as spawnCliProcess } from '../helpers/serve-process.js';

const clip = loadClips().find((c) => c.id === 'librivox-0890')!;
const children = new Set<ChildProcess>();
let url: string;
let accessKey: string;

beforeAll(async () => {
  const dataDir = tempDir();
  const port = await freePort();
  accessKey = createAccount(dataDir);
  await serve(dataDir, port, children);
  url = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** Without SCRIBED_ACCESS_KEY: the key comes from the file under test only. */
function spawnCli(args: string[]) {
  return spawnCliProcess(args, { children, env: { SCRIBED_ACCESS_KEY: undefined } });
}

function keyFile(text: string): string {
  const file = path.join(tempDir(), 'access-key');
  fs.writeFileSync(file, text, { mode: 0o600 });
  return file;
}

describe('access-key files of the ingest CLIs', () => {
  it('scribed rtp: a key file with a comment line after the key creates the session; the key is never logged', async () => {
    const file = keyFile(`${accessKey}\n# rotated 2026-11 by ops\n`);
    const rtpPort = await freePort();
    const rtp = spawnCli([
      'rtp',
      '--listen',
      `127.0.0.1:${rtpPort}`,
      '--rtcp-port',
      'none',
      '--url',
      url,
      '--access-key-file',
      file,
      '--idle-timeout-ms',
      '400',
    ]);
    await expect.poll(() => rtp.lines.some((l) => l.msg === 'scribed rtp listening'), { timeout: 20_000 }).toBe(true);
    const sender = await RtpTestSender.open(0x5151);
    for (const p of packetize(clip.mulaw8k.subarray(0, 8000), { payloadType: 0 })) await sender.send(p, rtpPort);
    sender.close();
    // Before: "Headers.append: <key + comment> is an invalid header value", retried for ever.
    await expect.poll(() => rtp.lines.find((l) => l.msg === 'rtp session closed'), { timeout: 20_000 }).toBeDefined();
    rtp.proc.kill('SIGTERM');
    expect(await rtp.exited).toBe(0);
    expect(rtp.output()).not.toContain(accessKey);
  }, 60_000);

  it('scribed rtp and scribed stream: a malformed key is refused at start, exit 2, the key not printed', async () => {
    const bad = `${accessKey.slice(0, 10)} ${accessKey.slice(10)}`;
    const file = keyFile(`${bad}\n`);
    for (const args of [
      ['rtp', '--listen', '127.0.0.1:0', '--url', url, '--access-key-file', file],
      ['stream', '--url', url, '--input', '-', '--encoding', 'mulaw_8000', '--access-key-file', file],
    ]) {
      const p = spawnCli(args);
      expect(await p.exited, p.output()).toBe(2);
      expect(p.output()).toMatch(/--access-key-file: the access key in .* is malformed/);
      expect(p.output()).not.toContain(accessKey.slice(10));
    }
  }, 30_000);
});
