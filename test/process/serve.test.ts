// The built CLI as an operator runs it: `scribed serve` in its own process, the accounts
// command writing the same data dir while it runs, SIGTERM finalizing and exiting 0.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { StreamClient } from '../helpers/stream-client.js';
import { CLI, startServe } from '../helpers/serve-process.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!;
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

function cli(args: string[], dataDir: string): string {
  return execFileSync(process.execPath, [CLI, ...args, '--data-dir', dataDir], { encoding: 'utf8' });
}

/** `scribed serve` on an ephemeral port, with one decoder. */
const serve = (dataDir: string) => startServe(dataDir, { children, args: ['--max-decoders', '1'] });

describe('scribed serve as a process', () => {
  it('creates accounts while running, redacts credentials, finalizes and exits 0 on SIGTERM', async () => {
    const dataDir = tempDir();
    const { proc, base, logs } = await serve(dataDir);
    const account = JSON.parse(cli(['accounts', 'create', '--name', 'ops', '--characters', '100', '--json'], dataDir)) as Record<
      string,
      string
    >;
    expect(Object.keys(account).sort()).toEqual(['accessKey', 'accountId', 'apiToken']);
    const credited = JSON.parse(cli(['accounts', 'credit', '--account', account.accountId!, '--characters', '50'], dataDir));
    expect(credited.characters).toBe('150');

    const h = { accessKey: account.accessKey!, 'content-type': 'application/json' };
    const created = (await (
      await fetch(`${base}/sound_clone/api/v1/stt/realtime/sessions`, {
        method: 'POST',
        headers: { ...h, 'Idempotency-Key': `proc-${randomUUID()}` },
        body: '{}',
      })
    ).json()) as any;
    const ticket = (await (
      await fetch(`${base}/sound_clone/api/v1/stt/realtime/sessions/${created.data.sessionId}/tickets`, { method: 'POST', headers: h })
    ).json()) as any;
    const ws = await StreamClient.connect(
      `${base.replace('http', 'ws')}${created.data.streamUrl}?ticket=${encodeURIComponent(ticket.data.ticket)}`,
    );
    await ws.next('ready');
    ws.audio(1, 0, clip.pcm16k.subarray(0, 64000));
    await ws.next('ack');

    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const t0 = Date.now();
    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await ws.closed).code).toBe(1012);
    expect(ws.ofType('final').map((f) => f.trigger)).toEqual(['shutdown']);

    const all = logs.join('\n');
    expect(all).toContain(created.data.sessionId);
    // the secret is everything after `<prefix>_<id>_`; it may itself contain `_`
    const secretOf = (credential: string) => credential.split('_').slice(2).join('_');
    expect(all).not.toContain(secretOf(account.accessKey!));
    expect(all).not.toContain(secretOf(ticket.data.ticket));
    expect(all).toContain('[Redacted]');

    // the segment finalized at shutdown survives the restart
    const again = await serve(dataDir);
    const txt = await (
      await fetch(`${again.base}/sound_clone/api/v1/stt/transcriptions/${created.data.transcriptionId}/transcript?format=json`, {
        headers: h,
      })
    ).json();
    expect((txt as any).segments).toHaveLength(1);
    again.proc.kill('SIGTERM');
  }, 60_000);

  it('a port another server holds fails in a moment, before the capacity measurement, naming the port and the fix', async () => {
    const other = net.createServer();
    await new Promise<void>((resolve) => other.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const port = (other.address() as net.AddressInfo).port;
    try {
      const started = Date.now();
      // No --max-decoders and a new data dir: a start that got that far would measure capacity
      // for tens of seconds before trying to listen.
      const proc = spawn(process.execPath, [CLI, 'serve', '--port', String(port), '--data-dir', tempDir()], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(proc);
      let stderr = '';
      proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      proc.stdout!.resume();
      const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
      expect(code).not.toBe(0);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(stderr).toContain(`SCRIBED_PORT=${port + 1} npm start`);
      expect(stderr).toContain(`--port ${port + 1}`);
    } finally {
      other.close();
    }
  });
});
