// `scribed rtp` gives up a call it cannot deliver the way `scribed stream` gives up:
// a server never reached is retried for --connect-timeout-ms while the call's audio is held,
// then the call is given up with one log line and scribed_rtp_streams_given_up_total, its
// audio written to --out; the daemon goes on and transcribes the next call once the server is
// there; the first SIGTERM ends it within --stop-timeout-ms, also with a call still waiting.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { createAccount, freePort, freeUdpPort, serve, spawnCli, type CliProcess } from '../helpers/serve-process.js';
import { packetize, RtpTestSender } from '../helpers/rtp.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!; // 3.0 s
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

function startRtp(args: string[], accessKey: string): CliProcess {
  return spawnCli(['rtp', ...args], { children, env: { SCRIBED_ACCESS_KEY: accessKey } });
}

/** Send `audio` as a PCMU call in 20 ms packets at real time; `stop()` ends it early. */
function call(ssrc: number, port: number, audio: Buffer) {
  let stopped = false;
  const done = (async () => {
    const sender = await RtpTestSender.open(ssrc);
    const t0 = Date.now();
    const packets = packetize(audio, { payloadType: 0, seq0: ssrc & 0xffff, ts0: ssrc });
    for (let i = 0; i < packets.length && !stopped; i++) {
      const wait = t0 + i * 20 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await sender.send(packets[i]!, port).catch(() => undefined);
    }
    sender.close();
  })();
  return { done, stop: () => (stopped = true) };
}

const metric = async (port: number, series: string) => {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : NaN;
};

describe('scribed rtp gives up a call it cannot deliver', () => {
  it('a server never reached: the call is given up after --connect-timeout-ms with its audio in --out; the daemon serves the next call', async () => {
    const dataDir = tempDir();
    const accessKey = createAccount(dataDir);
    const serverPort = await freePort(); // nothing listens there yet
    const udp = await freeUdpPort();
    const out = tempDir('scribed-rtp-out-');
    const rtp = startRtp(
      [
        '--listen',
        `127.0.0.1:${udp}`,
        '--rtcp-port',
        'none',
        '--url',
        `http://127.0.0.1:${serverPort}`,
        '--out',
        out,
        '--metrics-port',
        '0',
        '--idle-timeout-ms',
        '1000',
        '--connect-timeout-ms',
        '1000',
        '--stop-timeout-ms',
        '5000',
      ],
      accessKey,
    );
    await rtp.waitFor((r) => r.msg === 'scribed rtp listening');
    const metricsPort = Number((await rtp.waitFor((r) => r.msg === 'metrics listening')).port);

    const lost = call(0x1111aaaa, udp, clip.mulaw8k);
    const gaveUp = await rtp.waitFor((r) => typeof r.msg === 'string' && r.msg.startsWith('gave up on the call'));
    expect(gaveUp).toMatchObject({ level: 50, reason: 'unreachable', ssrc: '1111aaaa' });
    expect(gaveUp.msg).toContain(`could not create the session at http://127.0.0.1:${serverPort} within 1 s`);
    expect(gaveUp.msg).toContain('--encoding mulaw_8000');
    expect(await metric(metricsPort, 'scribed_rtp_streams_given_up_total{reason="unreachable"}')).toBe(1);
    // Given up while the call was still going on: the rest of it is added to the file.
    await lost.done;
    await rtp.waitFor((r) => r.msg === 'rtp stream ended' && r.ssrc === '1111aaaa');
    const file = String(gaveUp.file);
    expect(path.dirname(file)).toBe(out);
    await expect.poll(() => fs.statSync(file).size, { timeout: 5000 }).toBe(clip.mulaw8k.length);
    expect(fs.readFileSync(file).equals(clip.mulaw8k)).toBe(true);
    expect(rtp.lines.filter((r) => typeof r.msg === 'string' && r.msg.startsWith('gave up on the call'))).toHaveLength(1);
    expect(rtp.proc.exitCode).toBeNull(); // the daemon is still there

    // The server comes up: the next call is transcribed by the same daemon.
    await serve(dataDir, serverPort, children);
    const next = call(0x2222bbbb, udp, clip.mulaw8k);
    await next.done;
    const closed = await rtp.waitFor((r) => r.msg === 'rtp session closed' && r.ssrc === '2222bbbb', 40_000);
    expect(Number(closed.acknowledgedSamples)).toBe(clip.mulaw8k.length);
    expect(rtp.stdout.some((l) => l.startsWith(`${String(closed.sessionId)} `))).toBe(true);
    expect(await metric(metricsPort, 'scribed_rtp_streams_given_up_total{reason="unreachable"}')).toBe(1);

    const t0 = Date.now();
    rtp.proc.kill('SIGTERM');
    expect(await rtp.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
  }, 120_000);

  it('the first SIGTERM with a call still waiting for its session ends the daemon within --stop-timeout-ms, the audio kept', async () => {
    const serverPort = await freePort();
    const udp = await freeUdpPort();
    const out = tempDir('scribed-rtp-out-');
    // The default connect budget (30 s) is far longer than the test: only the signal ends it.
    const rtp = startRtp(
      [
        '--listen',
        `127.0.0.1:${udp}`,
        '--rtcp-port',
        'none',
        '--url',
        `http://127.0.0.1:${serverPort}`,
        '--out',
        out,
        '--stop-timeout-ms',
        '3000',
      ],
      'sk_test_never_used',
    );
    await rtp.waitFor((r) => r.msg === 'scribed rtp listening');
    const waiting = call(0x3333cccc, udp, clip.mulaw8k);
    await rtp.waitFor((r) => r.msg === 'creating the session failed; retrying');
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    rtp.proc.kill('SIGTERM');
    const code = await rtp.exited;
    const took = Date.now() - t0;
    waiting.stop();
    await waiting.done;
    expect(code).toBe(0);
    expect(took).toBeLessThan(3000 + 1000);
    const gaveUp = rtp.lines.find((r) => typeof r.msg === 'string' && r.msg.startsWith('gave up on the call'));
    expect(gaveUp).toMatchObject({ reason: 'shutdown', ssrc: '3333cccc' });
    expect(gaveUp!.msg).toContain('the process stopped before its session could be created');
    // What arrived before the signal is in the file, in order.
    const kept = fs.readFileSync(String(gaveUp!.file));
    expect(kept.length).toBeGreaterThan(8000);
    expect(kept.equals(clip.mulaw8k.subarray(0, kept.length))).toBe(true);
  }, 60_000);
});

describe('scribed rtp and an account without Characters', () => {
  it('gives the call up after --credit-timeout-ms (no_credit), keeps the rest of its audio, and goes on', async () => {
    const dataDir = tempDir();
    const serverPort = await freePort();
    await serve(dataDir, serverPort, children);
    const brokeKey = createAccount(dataDir, { name: 'broke', characters: 0 });
    const udp = await freeUdpPort();
    const out = tempDir('scribed-rtp-out-');
    const rtp = startRtp(
      [
        '--listen',
        `127.0.0.1:${udp}`,
        '--rtcp-port',
        'none',
        '--url',
        `http://127.0.0.1:${serverPort}`,
        '--out',
        out,
        '--metrics-port',
        '0',
        '--idle-timeout-ms',
        '1000',
        '--credit-timeout-ms',
        '1000',
      ],
      brokeKey,
    );
    await rtp.waitFor((r) => r.msg === 'scribed rtp listening');
    const metricsPort = Number((await rtp.waitFor((r) => r.msg === 'metrics listening')).port);
    // 9 s: long enough that the give-up (1 s after the first refusal) lands inside the call.
    const audio = Buffer.concat([clip.mulaw8k, clip.mulaw8k, clip.mulaw8k]);
    const c = call(0x4444dddd, udp, audio);
    const gaveUp = await rtp.waitFor((r) => typeof r.msg === 'string' && r.msg.startsWith('gave up on the call'), 20_000);
    expect(gaveUp).toMatchObject({ reason: 'no_credit', ssrc: '4444dddd' });
    expect(gaveUp.msg).toContain('scribed accounts credit --account');
    expect(gaveUp.msg).not.toContain('--stream-id');
    await c.done;
    await rtp.waitFor((r) => r.msg === 'rtp stream ended' && r.ssrc === '4444dddd');
    expect(await metric(metricsPort, 'scribed_rtp_streams_given_up_total{reason="no_credit"}')).toBe(1);
    // Given up means given up: the session is not resumed again and again for the rest of the call.
    expect(rtp.lines.filter((r) => r.msg === 'reconnecting' && r.time > gaveUp.time)).toEqual([]);
    // The rest of the call after the give-up is in the file: the end of the call's audio.
    await expect.poll(() => fs.statSync(String(gaveUp.file)).size, { timeout: 5000 }).toBeGreaterThan(0);
    const kept = fs.readFileSync(String(gaveUp.file));
    expect(kept.length).toBeGreaterThan(8000);
    expect(kept.equals(audio.subarray(audio.length - kept.length))).toBe(true);
    expect(rtp.proc.exitCode).toBeNull();
    rtp.proc.kill('SIGTERM');
    expect(await rtp.exited).toBe(0);
  }, 60_000);
});
