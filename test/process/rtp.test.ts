// `scribed rtp` as an operator runs it: a `scribed serve` process, a `scribed rtp` process
// with the key in a file, ffmpeg's RTP muxer as the phone system, junk datagrams on the
// port, transcripts in --out, Prometheus metrics on --metrics-port, and SIGTERM in the middle
// of a call closing its session with what was received.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { CLI, createAccount, freeUdpPorts, spawnCli } from '../helpers/serve-process.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!;
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

function ffmpeg(port: number, rtcpPort: number, codec: string): ChildProcess {
  const p = spawn(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-re',
      '-i',
      clip.wavFile,
      '-ar',
      '8000',
      '-ac',
      '1',
      '-c:a',
      codec,
      '-f',
      'rtp',
      `rtp://127.0.0.1:${port}?rtcpport=${rtcpPort}&pkt_size=172`,
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  children.add(p);
  return p;
}

function metricValue(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : NaN;
}

describe('scribed rtp as a process', () => {
  it('transcribes an ffmpeg call to --out, drops junk, exports metrics, and closes a call in progress on SIGTERM', async () => {
    const dataDir = tempDir();
    const serve = spawnCli(['serve', '--port', '0', '--data-dir', dataDir, '--max-decoders', '2'], { children, logStream: 'stdout' });
    const listening = await serve.waitFor((r) => r.msg === 'scribed listening');
    const base = String(listening.address);
    const accessKey = createAccount(dataDir, { name: 'pbx', characters: 1000 });
    const keyFile = path.join(tempDir(), 'access-key');
    fs.writeFileSync(keyFile, `${accessKey}\n`, { mode: 0o600 });
    const out = tempDir('scribed-rtp-out-');
    const [port, rtcpPort] = await freeUdpPorts(2);

    const rtp = spawnCli(
      [
        'rtp',
        '--listen',
        `127.0.0.1:${port}`,
        '--rtcp-port',
        String(rtcpPort),
        '--url',
        base,
        '--out',
        out,
        '--access-key-file',
        keyFile,
        '--metrics-port',
        '0',
        '--idle-timeout-ms',
        '600',
      ],
      { children },
    );
    await rtp.waitFor((r) => r.msg === 'scribed rtp listening');
    const metricsPort = Number((await rtp.waitFor((r) => r.msg === 'metrics listening')).port);

    // Junk on the RTP port before and during the call.
    const junk = dgram.createSocket('udp4');
    const sendJunk = (b: Buffer) => new Promise<void>((resolve) => junk.send(b, port!, '127.0.0.1', () => resolve()));
    for (let i = 0; i < 20; i++) await sendJunk(Buffer.from([0x80, i]));
    const call = ffmpeg(port!, rtcpPort!, 'pcm_mulaw');
    for (let i = 0; i < 20; i++) await sendJunk(Buffer.from('not rtp at all, version bits 01'));
    junk.close();
    await new Promise((resolve) => call.once('exit', resolve));

    const closed = await rtp.waitFor((r) => r.msg === 'rtp session closed', 30_000);
    expect(closed).toMatchObject({ reason: 'idle', lost: 0, overflowSamples: 0 });
    const sessionId = String(closed.sessionId);
    expect(sessionId).toMatch(/^rts_/);
    expect(closed.ssrc).toMatch(/^[0-9a-f]{8}$/);
    const text = fs.readFileSync(path.join(out, `${sessionId}.txt`), 'utf8').trim();
    expect(text.split(/\s+/).length).toBeGreaterThan(3);
    // Calls get one final per utterance by default: the session was made in vad mode.
    const session = (await (
      await fetch(`${base}/sound_clone/api/v1/stt/realtime/sessions/${sessionId}`, { headers: { accessKey: accessKey } })
    ).json()) as { data: { effectiveOptions: Record<string, unknown> } };
    expect(session.data.effectiveOptions.segmentCommitMode).toBe('vad');
    expect(rtp.stdout.some((l) => l.startsWith(`${sessionId} `))).toBe(true);
    // Every log line of the stream names it; none carries the key.
    const streamLines = rtp.lines.filter((l) => l.streamId);
    expect(streamLines.length).toBeGreaterThan(0);
    expect(JSON.stringify(rtp.lines)).not.toContain(accessKey);

    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metricValue(metrics, 'scribed_rtp_packets_received_total')).toBeGreaterThan(140);
    expect(metricValue(metrics, 'scribed_rtp_packets_malformed_total{reason="too_short"}')).toBe(20);
    expect(metricValue(metrics, 'scribed_rtp_packets_malformed_total{reason="bad_version"}')).toBe(20);
    expect(metricValue(metrics, 'scribed_rtp_streams_ended_total{reason="idle"}')).toBe(1);
    expect(metricValue(metrics, 'scribed_rtp_streams')).toBe(0);
    expect(metricValue(metrics, 'scribed_client_audio_acknowledged_seconds_total')).toBeCloseTo(clip.durationSec, 1);

    // A second call, cut by SIGTERM half way: its session is closed with what arrived.
    const second = ffmpeg(port!, rtcpPort!, 'pcm_alaw');
    const started = await rtp.waitFor((r) => r.msg === 'rtp stream streaming to session' && r.sessionId !== sessionId);
    await new Promise((r) => setTimeout(r, 1500));
    rtp.proc.kill('SIGTERM');
    expect(await rtp.exited).toBe(0);
    second.kill('SIGKILL');
    const closedOnStop = rtp.lines.find((r) => r.msg === 'rtp session closed' && r.sessionId === started.sessionId);
    expect(closedOnStop).toMatchObject({ reason: 'shutdown' });
    expect(Number(closedOnStop!.capturedSamples)).toBeGreaterThan(8000);
    expect(Number(closedOnStop!.acknowledgedSamples)).toBe(Number(closedOnStop!.capturedSamples));
    expect(fs.existsSync(path.join(out, `${String(started.sessionId)}.jsonl`))).toBe(true);

    serve.proc.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  }, 60_000);

  it('refuses to start without an access key, naming the two ways to give one', async () => {
    const env = { ...process.env };
    delete env.SCRIBED_ACCESS_KEY;
    const r = spawn(process.execPath, [CLI, 'rtp', '--listen', '127.0.0.1:0', '--url', 'http://127.0.0.1:1'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(r);
    let stderr = '';
    r.stderr!.on('data', (d) => (stderr += d));
    const code = await new Promise((resolve) => r.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/VALIDATION_FAILED: --access-key-file: no access key: pass --access-key-file FILE or set SCRIBED_ACCESS_KEY/);
  });

  it('refuses a bad --payload-type and a bad --listen before binding anything', () => {
    for (const [flags, message] of [
      [['--listen', '127.0.0.1:0', '--payload-type', '96=opus/48000'], /unknown codec/],
      [['--listen', 'localhost:40000'], /not an IP address/],
      [['--listen', '127.0.0.1:0', '--rtcp-port', 'x'], /--rtcp-port: must be a port or "none"/],
      // the session-option flags of `scribed stream`, checked the same way
      [['--listen', '127.0.0.1:0', '--session-option', 'noequals'], /--session-option: --session-option wants NAME=JSON/],
      [['--listen', '127.0.0.1:0', '--segment-commit-mode', 'sometimes'], /Invalid values:[\s\S]*segment-commit-mode/],
    ] as const) {
      const args = ['rtp', '--url', 'http://127.0.0.1:1', ...flags];
      let stderr = '';
      try {
        execFileSync(process.execPath, [CLI, ...args], {
          env: { ...process.env, SCRIBED_ACCESS_KEY: 'sk_x_y' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch (err) {
        stderr = String((err as { stderr: Buffer }).stderr);
      }
      expect(stderr).toMatch(message);
    }
  });

  // docs/rtp.md, "Trying it with ffmpeg": ffmpeg sends L16 at 16 kHz as payload type 97.
  // Without the mapping the call is dropped with one warning naming the flag (before: only a
  // metric); with it, the call is transcribed.
  it("ffmpeg's L16 16 kHz (type 97): one warning naming --payload-type 97=l16/16000, then transcribed with it", async () => {
    const dataDir = tempDir();
    const serve = spawnCli(['serve', '--port', '0', '--data-dir', dataDir, '--max-decoders', '1'], { children, logStream: 'stdout' });
    const base = String((await serve.waitFor((r) => r.msg === 'scribed listening')).address);
    const accessKey = createAccount(dataDir, { name: 'ffmpeg', characters: 1000 });
    const keyFile = path.join(tempDir(), 'access-key');
    fs.writeFileSync(keyFile, `${accessKey}\n`, { mode: 0o600 });
    const [port, rtcpPort] = await freeUdpPorts(2);
    const l16 = (realtime: boolean) => {
      const p = spawn(
        'ffmpeg',
        [
          '-hide_banner',
          '-loglevel',
          'error',
          ...(realtime ? ['-re'] : []),
          '-i',
          clip.wavFile,
          '-ar',
          '16000',
          '-ac',
          '1',
          '-c:a',
          'pcm_s16be',
          '-f',
          'rtp',
          `rtp://127.0.0.1:${port}?rtcpport=${rtcpPort}&pkt_size=652`,
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      children.add(p);
      return new Promise((resolve) => p.once('exit', resolve));
    };
    const rtpArgs = [
      'rtp',
      '--listen',
      `127.0.0.1:${port}`,
      '--rtcp-port',
      String(rtcpPort),
      '--url',
      base,
      '--access-key-file',
      keyFile,
      '--idle-timeout-ms',
      '600',
    ];

    const unmapped = spawnCli(rtpArgs, { children });
    await unmapped.waitFor((r) => r.msg === 'scribed rtp listening');
    await l16(false);
    const warning = await unmapped.waitFor((r) => r.level === 40 && r.payloadType === 97);
    expect(String(warning.msg)).toContain('--payload-type 97=l16/16000');
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(unmapped.lines.filter((r) => r.payloadType === 97 && r.level === 40)).toHaveLength(1);
    expect(unmapped.lines.some((r) => r.msg === 'rtp stream started')).toBe(false);
    unmapped.proc.kill('SIGTERM');
    await unmapped.exited;

    const mapped = spawnCli([...rtpArgs, '--payload-type', '97=l16/16000'], { children });
    await mapped.waitFor((r) => r.msg === 'scribed rtp listening');
    await l16(true);
    const closed = await mapped.waitFor((r) => r.msg === 'rtp session closed', 30_000);
    expect(closed).toMatchObject({ reason: 'idle', lost: 0 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const prefix = `${String(closed.sessionId)} `;
    const words = mapped.stdout.filter((l) => l.startsWith(prefix)).flatMap((l) => l.slice(prefix.length).trim().split(/\s+/));
    expect(words.length, mapped.stdout.join('\n')).toBeGreaterThan(3);
  });
});
