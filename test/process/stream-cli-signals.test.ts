// `scribed stream` stopped by a signal, as an operator does with Ctrl-C: stdin is a pipe that
// stays open (a live call), so the only end of input is the signal. The first SIGINT must end
// the input cleanly: flush, close the session, write the transcript files, exit 0.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { CLI, createAccount, freePort, serve } from '../helpers/serve-process.js';

const clip = loadClips().find((c) => c.id === 'librivox-0890')!; // 5.3 s
const children = new Set<ChildProcess>();
let dataDir: string;
let url: string;
let accessKey: string;

beforeAll(async () => {
  dataDir = tempDir();
  const port = await freePort();
  accessKey = createAccount(dataDir);
  await serve(dataDir, port, children);
  url = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** `scribed stream --input -` with stdin left open; logs parsed as they come. */
function startStream(out: string) {
  const proc = spawn(
    process.execPath,
    [CLI, 'stream', '--url', url, '--input', '-', '--encoding', 'mulaw_8000', '--out', out, '--metrics-port', '0'],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, SCRIBED_ACCESS_KEY: accessKey },
    },
  );
  children.add(proc);
  const logs: Array<Record<string, any>> = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (line) => {
    if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`${line}\n`);
    if (line.startsWith('{')) logs.push(JSON.parse(line) as Record<string, any>);
  });
  proc.stdout!.resume();
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      children.delete(proc);
      resolve(code);
    }),
  );
  return { proc, logs, exited };
}

async function capturedSeconds(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return Number(/^scribed_client_audio_captured_seconds_total (\S+)$/m.exec(text)?.[1] ?? 0);
}

describe('scribed stream and signals', () => {
  it('the first SIGINT on an open stdin pipe closes the session with everything read, writes the files, exits 0', async () => {
    const out = tempDir();
    const s = startStream(out);
    s.proc.stdin!.write(clip.mulaw8k);
    await expect.poll(() => s.logs.find((l) => l.msg === 'metrics on /metrics')?.port, { timeout: 20_000 }).toBeTypeOf('number');
    const metricsPort = s.logs.find((l) => l.msg === 'metrics on /metrics')!.port as number;
    // Everything written has been read from the pipe (which stays open) before the signal.
    await expect.poll(() => capturedSeconds(metricsPort), { timeout: 20_000, interval: 100 }).toBeCloseTo(clip.mulaw8k.length / 8000, 6);
    s.proc.kill('SIGINT');
    const code = await s.exited;
    s.proc.stdin!.destroy();
    expect(code, JSON.stringify(s.logs.slice(-3))).toBe(0);
    const done = s.logs.find((l) => l.msg === 'stream finished')!;
    expect(done.capturedSamples).toBe(clip.mulaw8k.length);
    expect(done.serverCapturedSamples).toBe(clip.mulaw8k.length);
    const session = (await (
      await fetch(`${url}/sound_clone/api/v1/stt/realtime/sessions/${done.sessionId}`, { headers: { accessKey } })
    ).json()) as any;
    expect(['PROCESSING', 'COMPLETED']).toContain(session.data.status); // closed: the History task status
    const txt = fs.readFileSync(path.join(out, `${done.sessionId}.txt`), 'utf8');
    expect(txt).toMatch(/rather/);
    expect(
      fs
        .readFileSync(path.join(out, `${done.sessionId}.jsonl`), 'utf8')
        .trim()
        .split('\n').length,
    ).toBe(done.segments);
  }, 60_000);
});
