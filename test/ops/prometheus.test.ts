// The dashboards and alert rules against a real Prometheus (Debian's) scraping a real
// `scribed serve` node, a `scribed rtp` and a `scribed gateway` daemon every second, under
// traffic: a stream of a sample clip (a live rule matching its words) with a rejected frame, a
// duplicate and a gap, two resumes and a close; a close by request; a ticket; a watcher;
// refused handshakes (429, 404); a batch job; an RTP call with lost packets, an RTCP BYE and a malformed datagram; a Twilio media
// stream with a message that is not JSON, and a path the gateway refuses. Then every query of
// every panel of docs/grafana/*.json is run with Grafana's variables put in, and must parse and
// (but for the panels listed below) show data; the issue-31 figures are checked on the node;
// promtool checks every /metrics.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, createAccount, freePort, serve } from '../helpers/serve-process.js';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { HandshakeRefused, StreamClient } from '../helpers/stream-client.js';
import { RtpTestSender, packetize } from '../helpers/rtp.js';
import { Prometheus } from '../helpers/prometheus.js';
import WebSocket from 'ws';

const ROOT = path.resolve(import.meta.dirname, '../..');
const GRAFANA_DIR = path.join(ROOT, 'docs/grafana');
const RULES = path.join(ROOT, 'deploy/prometheus/scribed-rules.yml');
const API = '/sound_clone/api/v1';
const SESSIONS = `${API}/stt/realtime/sessions`;
const clip = loadClips().find((c) => c.id === 'librivox-0880')!;

/** Panels this traffic does not fill, and why. Every other panel must show data. */
const MAY_STAY_EMPTY: Record<string, string> = {
  // Recognition keeps up with two streams on two decoders: nothing waits, nothing is deferred;
  // the decode backlog is 0 at most scrapes (test/session/deferred-recognition.test.ts fills these).
  'Decoding backlog (audio acknowledged, not yet decoded)': 'may be 0 at every scrape',
  'Deferred recognition: audio waiting, lag and wait p95': 'no deferral',
  'Deferred sessions, and sockets deferred (per minute)': 'no deferral',
  // --max-decoders is given, so the node runs no calibration (docs/scaling.md).
  'Memory one further decoder adds (calibration)': 'no calibration',
  // Other products of the API, each with its own tests.
  'Interpretation retries by outcome (per minute)': 'no interpretation project',
  'Voice design callbacks by outcome (per minute)': 'no voice design',
  'Voice recordings accepted': 'no voice upload',
  // No Genesys client connects in this traffic (test/server/audiohook.test.ts checks the metrics).
  'Genesys AudioHook: open connections, refusals by reason (per minute), audio received (s/s)': 'no AudioHook connection',
  // No SIPREC listener in this traffic (test/server/siprec.test.ts checks the metrics).
  'SIPREC: open recording sessions and streams, sessions by outcome and RTP packets lost (per minute)': 'no SIPREC listener',
  // Limits this traffic stays far below (test/server/connection-limits.test.ts, watch.test.ts).
  'Connections dropped at SCRIBED_MAX_CONNECTIONS (per minute)': 'under the connection cap',
  'Watch sockets let go (per minute)': 'no slow watcher',
  // The daemon's ring buffers never fill and the server fills no gap of its audio
  // (test/process/ingest-faults.test.ts).
  'Ring buffer overflows (per minute)': 'no overflow',
  'Audio lost to overflow before acknowledgement (seconds of audio per second)': 'no overflow',
  'Samples the server filled with silence (gap events, per second)': "no gap in the daemon's audio",
};

interface Panel {
  title: string;
  type: string;
  targets?: Array<{ expr: string }>;
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; definition?: string }> };
}

const children = new Set<ChildProcess>();
let prom: Prometheus;
let base: string;
let rtpMetricsUrl: string;
let gatewayMetricsUrl: string;
const METRICS_TOKEN = 'prometheus-test-token-0123456789';
let metricsTokenFile: string;
let trafficStart: number;
/** Resumes answered 200 and sessions closed by the traffic, for the node's counters. */
let resumes = 0;
let closes = 0;

/** An ingest daemon (`scribed rtp`, `scribed gateway`); resolves with its metrics port. */
function spawnDaemon(command: string, args: string[]): Promise<{ proc: ChildProcess; metricsPort: number }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, command, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, SCRIBED_LOG_LEVEL: 'info' },
    });
    children.add(proc);
    proc.once('exit', () => children.delete(proc));
    readline.createInterface({ input: proc.stderr! }).on('line', (line) => {
      if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[${command}] ${line}\n`);
      let rec: { msg?: string; port?: number };
      try {
        rec = JSON.parse(line) as typeof rec;
      } catch {
        return;
      }
      if (rec.msg === 'metrics listening') resolve({ proc, metricsPort: Number(rec.port) });
    });
    proc.once('exit', (code) => reject(new Error(`scribed ${command} exited early (${code})`)));
  });
}

async function post(p: string, key: string, body: unknown = {}, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${p}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function createSession(key: string) {
  const r = await post(
    SESSIONS,
    key,
    { title: 'prometheus test', options: { inputEncoding: 'mulaw_8000' } },
    { 'Idempotency-Key': randomUUID() },
  );
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json.data as { sessionId: string; streamUrl: string };
}

const wsUrl = (p: string) => `${base.replace(/^http/, 'ws')}${p}`;

/** Send mu-law audio as 20 ms frames; resolves on the ack of the last one. */
async function sendAudio(client: StreamClient, epoch: number, from: number, audio: Buffer): Promise<number> {
  let offset = from;
  for (let i = 0; i < audio.length; i += 160) {
    const frame = audio.subarray(i, i + 160);
    client.audio(epoch, offset, frame);
    offset += frame.length;
  }
  await client.next('ack', (e) => e.epoch === epoch && e.sampleOffset === offset, 60_000);
  return offset;
}

/** A webhook receiver on loopback that answers 500: the stream's close raises a delivery whose
 * attempts fail and retry (5 s, then 20 s later), so the outbox holds it for the samples. */
async function webhookTraffic(key: string): Promise<() => void> {
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as import('node:net').AddressInfo).port}/hook`;
  const created = await post(`${API}/webhooks/endpoints`, key, { url, events: ['transcription.completed'] });
  expect(created.status, JSON.stringify(created.json)).toBe(201);
  return () => receiver.close();
}

async function streamTraffic(key: string, otherKey: string): Promise<void> {
  // A live rule any spoken word matches: the session's finals raise alerts.
  const rule = await post(`${API}/stt/rules`, key, { name: 'any word', pattern: '\\w' });
  expect(rule.status, JSON.stringify(rule.json)).toBe(201);
  // A post-call category any spoken word matches: the session's completion counts a match.
  const category = await post(`${API}/stt/categories`, key, { name: 'any word', conditions: [{ pattern: '\\w' }] });
  expect(category.status, JSON.stringify(category.json)).toBe(201);
  // A session streamed over a ticket, watched, with a rejected frame, a duplicate and a gap.
  const s = await createSession(key);
  const ticket = await post(`${SESSIONS}/${s.sessionId}/tickets`, key);
  expect(ticket.status).toBe(200);
  const client = await StreamClient.connect(`${wsUrl(ticket.json.data.streamUrl)}?ticket=${encodeURIComponent(ticket.json.data.ticket)}`);
  await client.next('ready');
  const watcher = await StreamClient.connect(wsUrl(`${SESSIONS}/${s.sessionId}/events`), { accessKey: key });
  let offset = await sendAudio(client, 1, 0, clip.mulaw8k);
  client.control({ type: 'no_such_message' });
  await client.next('error');
  client.audio(1, offset - 160, clip.mulaw8k.subarray(0, 160)); // already received: dropped
  offset = await sendAudio(client, 1, offset + 80, clip.mulaw8k.subarray(0, 160)); // 80 samples of gap filled
  client.control({ type: 'commit' });
  await client.next('final');

  // The same account may hold one socket on this node (--max-streams-per-account 1): 429.
  const second = await createSession(key);
  const refused = await StreamClient.connect(wsUrl(second.streamUrl), { accessKey: key }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(refused).toBeInstanceOf(HandshakeRefused);
  expect((refused as HandshakeRefused).status).toBe(429);
  // A socket to a session that does not exist, and another account's session: 404.
  for (const url of [`${SESSIONS}/rts_nosuchsession/stream`, second.streamUrl]) {
    const err = await StreamClient.connect(wsUrl(url), { accessKey: otherKey }).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as HandshakeRefused).status).toBe(404);
  }
  // The refused session ends by request, without a socket.
  const closed = await post(`${SESSIONS}/${second.sessionId}/close`, key);
  expect(closed.status, JSON.stringify(closed.json)).toBe(200);
  closes += 1;

  // Resume (the socket is superseded), stream a second epoch, resume once more, close.
  let r = await post(`${SESSIONS}/${s.sessionId}/resume`, key, { capturedSamples: String(offset) });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  resumes += 1;
  await client.closed;
  const again = await StreamClient.connect(wsUrl(s.streamUrl), { accessKey: key });
  await again.next('ready');
  await sendAudio(again, 2, 0, clip.mulaw8k.subarray(0, 8000));
  again.close();
  await again.closed;
  r = await post(`${SESSIONS}/${s.sessionId}/resume`, key, {});
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  resumes += 1;
  const last = await StreamClient.connect(wsUrl(s.streamUrl), { accessKey: key });
  await last.next('ready');
  last.control({ type: 'close' });
  await last.next('closed');
  closes += 1;
  await watcher.closed;
}

async function batchTraffic(key: string): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(clip.wavFile)]), 'clip.wav');
  const res = await fetch(`${base}${API}/stt/transcriptions`, { method: 'POST', headers: { accessKey: key }, body: form });
  const job = (await res.json()) as any;
  expect(res.status, JSON.stringify(job)).toBe(200);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const view = (await (
      await fetch(`${base}${API}/stt/transcriptions/${job.data.transcriptionId}`, { headers: { accessKey: key } })
    ).json()) as any;
    if (view.data.status === 'COMPLETED') return;
    if (Date.now() > deadline) throw new Error(`batch job not completed: ${JSON.stringify(view.data)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function rtpTraffic(port: number): Promise<void> {
  const sender = await RtpTestSender.open(0x5eed0001);
  try {
    await sender.sendRaw(Buffer.from([0x80, 0x00]), port); // too short to be RTP
    const packets = packetize(clip.mulaw8k, { payloadType: 0, seq0: 1000, ts0: 160_000 });
    const start = Date.now();
    for (let i = 0; i < packets.length; i++) {
      // Every 25th packet is lost; the 10th also arrives twice.
      if (i % 25 !== 24) await sender.send(packets[i]!, port);
      if (i === 10) await sender.send(packets[i]!, port);
      const due = start + (i + 1) * 20 - Date.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
    }
    await sender.bye(port);
  } finally {
    sender.close();
  }
}

/** A Twilio media stream of one inbound leg: the clip as 20 ms media messages, one message
 * that is not JSON, then stop; and a connection to a path the gateway does not serve. */
async function gatewayTraffic(listen: string): Promise<void> {
  const refused = await new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(`ws://${listen}/nope`);
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('open', () => reject(new Error('the gateway took /nope')));
    ws.once('error', () => undefined);
  });
  expect(refused).toBe(404);
  const ws = new WebSocket(`ws://${listen}/twilio`);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const send = (m: unknown) => ws.send(typeof m === 'string' ? m : JSON.stringify(m));
  send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  send({
    event: 'start',
    sequenceNumber: '1',
    start: {
      streamSid: 'MZprom',
      accountSid: 'ACprom',
      callSid: 'CAprom',
      tracks: ['inbound'],
      customParameters: {},
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    },
    streamSid: 'MZprom',
  });
  send('not json');
  const start = Date.now();
  for (let i = 0, chunk = 1; i < clip.mulaw8k.length; i += 160, chunk++) {
    const payload = clip.mulaw8k.subarray(i, i + 160).toString('base64');
    send({
      event: 'media',
      sequenceNumber: String(chunk + 1),
      media: { track: 'inbound', chunk: String(chunk), timestamp: String((chunk - 1) * 20), payload },
      streamSid: 'MZprom',
    });
    const due = start + chunk * 20 - Date.now();
    if (due > 0) await new Promise((r) => setTimeout(r, due));
  }
  send({ event: 'stop', sequenceNumber: '999', stop: { accountSid: 'ACprom', callSid: 'CAprom' }, streamSid: 'MZprom' });
  await new Promise((r) => setTimeout(r, 500));
  ws.close();
}

function promtoolCheckMetrics(text: string): string {
  try {
    return execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`promtool check metrics: ${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

/** A dashboard query as Grafana sends it: the rate interval at a 1 s scrape (four scrapes), and
 * "All" for every node variable. */
function substitute(expr: string): string {
  return expr.replace(/\$__rate_interval/g, '4s').replace(/\$(instance|node)\b/g, '.*');
}

beforeAll(async () => {
  const dataDir = tempDir();
  const port = await freePort();
  // The node asks for a bearer token on /metrics, as a networked deployment does
  // (docs/operations.md, "Metrics"); Prometheus reads it from a file, as deploy/prometheus does.
  const tokenFile = path.join(tempDir(), 'metrics-token');
  fs.writeFileSync(tokenFile, `${METRICS_TOKEN}\n`, { mode: 0o600 });
  metricsTokenFile = tokenFile;
  await serve(dataDir, port, children, [
    '--max-streams-per-account',
    '1',
    '--callback-allow-cidr',
    '127.0.0.1/32',
    '--metrics-token-file',
    tokenFile,
  ]);
  base = `http://127.0.0.1:${port}`;
  const rtpKeyFile = path.join(tempDir(), 'access-key');
  fs.writeFileSync(rtpKeyFile, `${createAccount(dataDir)}\n`, { mode: 0o600 });
  const rtpPort = await freePort();
  const rtp = await spawnDaemon('rtp', [
    '--listen',
    `127.0.0.1:${rtpPort}`,
    '--rtcp-port',
    'none',
    '--url',
    base,
    '--out',
    tempDir('scribed-rtp-out-'),
    '--access-key-file',
    rtpKeyFile,
    '--metrics-port',
    '0',
    '--idle-timeout-ms',
    '600',
  ]);
  rtpMetricsUrl = `http://127.0.0.1:${rtp.metricsPort}/metrics`;
  const gatewayKeyFile = path.join(tempDir(), 'access-key');
  fs.writeFileSync(gatewayKeyFile, `${createAccount(dataDir)}\n`, { mode: 0o600 });
  const gatewayListen = `127.0.0.1:${await freePort()}`;
  const gateway = await spawnDaemon('gateway', [
    '--listen',
    gatewayListen,
    '--url',
    base,
    '--access-key-file',
    gatewayKeyFile,
    '--metrics-port',
    '0',
  ]);
  gatewayMetricsUrl = `http://127.0.0.1:${gateway.metricsPort}/metrics`;
  prom = await Prometheus.start(
    [
      { job: 'scribed', targets: [`127.0.0.1:${port}`], bearerTokenFile: metricsTokenFile },
      { job: 'scribed-ingest', targets: [`127.0.0.1:${rtp.metricsPort}`, `127.0.0.1:${gateway.metricsPort}`] },
    ],
    [RULES],
  );
  // Both targets scraped (the zeroed series are in Prometheus before the first event).
  await prom.waitFor('count(up == 1)', (v) => v === 3);
  await prom.waitFor('count(scribed_sessions_created_total) + count(scribed_client_streams)', (v) => v === 3);
  await new Promise((r) => setTimeout(r, 2000));

  trafficStart = Date.now();
  const key = createAccount(dataDir);
  const otherKey = createAccount(dataDir);
  const stopReceiver = await webhookTraffic(key);
  await Promise.all([streamTraffic(key, otherKey), batchTraffic(otherKey), rtpTraffic(rtpPort), gatewayTraffic(gatewayListen)]);
  // The RTP call's session closes once the daemon saw the BYE.
  await prom.waitFor('scribed_rtp_streams_ended_total{reason="bye"}', (v) => v === 1);
  closes += 1;
  // The gateway's leg closes its session after the stop.
  await prom.waitFor('sum(scribed_gateway_legs)', (v) => v === 0);
  closes += 1;
  await prom.waitFor('scribed_sessions_closed_total', (v) => v === closes, 30_000);
  // The closed sessions' transcription.completed: attempted, refused with 500, pending for a retry.
  await prom.waitFor('sum(scribed_webhook_attempts_total{outcome="retry"})', (v) => v >= 1, 30_000);
  await prom.waitFor('scribed_webhook_outbox_depth', (v) => v >= 1, 30_000);
  stopReceiver();
  await new Promise((r) => setTimeout(r, 3000)); // a few more scrapes after the last event
}, 150_000);

afterAll(async () => {
  await prom?.stop();
  for (const c of children) c.kill('SIGKILL');
});

describe('dashboards and alert rules on a real Prometheus', () => {
  const files = fs.readdirSync(GRAFANA_DIR).filter((f) => f.endsWith('.json'));

  for (const file of files) {
    it(`${file}: every query parses and every panel shows the traffic`, async () => {
      const dashboard = JSON.parse(fs.readFileSync(path.join(GRAFANA_DIR, file), 'utf8')) as Dashboard;
      const empty: string[] = [];
      for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
        let filled = false;
        for (const t of panel.targets ?? []) {
          const series = await prom.queryRange(substitute(t.expr), trafficStart).catch((err: Error) => {
            throw new Error(`${panel.title}: ${t.expr}: ${err.message}`);
          });
          if (series.some((s) => s.values.some(([, v]) => Number(v) !== 0 && !Number.isNaN(Number(v))))) filled = true;
        }
        if (!filled && !(panel.title in MAY_STAY_EMPTY)) empty.push(panel.title);
      }
      expect(empty, 'panels with no data after traffic that should fill them').toEqual([]);
    });

    it(`${file}: its node variables list the scraped instances`, async () => {
      const dashboard = JSON.parse(fs.readFileSync(path.join(GRAFANA_DIR, file), 'utf8')) as Dashboard;
      for (const v of dashboard.templating.list.filter((x) => x.type === 'query')) {
        const m = /^label_values\((\w+), instance\)$/.exec(v.definition ?? '');
        expect(m, v.name).not.toBeNull();
        const values = await prom.get<string[]>(`label/instance/values?match[]=${encodeURIComponent(m![1]!)}`);
        expect(values.length, v.name).toBe(v.name === 'instance' && file === 'scribed-ingest.json' ? 2 : 1);
      }
    });
  }

  it('the allow-list names only panels that exist', () => {
    const titles = new Set(
      files.flatMap((f) => (JSON.parse(fs.readFileSync(path.join(GRAFANA_DIR, f), 'utf8')) as Dashboard).panels.map((p) => p.title)),
    );
    expect(Object.keys(MAY_STAY_EMPTY).filter((t) => !titles.has(t))).toEqual([]);
  });

  it('counts what the issue found miscounted: resumes, closes, the first rejected frame, an idle backlog of 0', async () => {
    const one = async (expr: string) => (await prom.query(expr))[0]?.value;
    expect(await one('scribed_session_resumes_total')).toBe(resumes);
    expect(await one('scribed_sessions_closed_total')).toBe(closes);
    // A counter born at its first increment would show an increase of 0 here.
    expect(await one('sum(increase(scribed_frame_errors_total{code="MALFORMED_FRAME"}[5m]))')).toBeGreaterThan(0.9);
    expect(await one('sum(increase(scribed_rtp_packets_malformed_total{reason="too_short"}[5m]))')).toBeGreaterThan(0.9);
    expect(await one('sum(increase(scribed_batch_jobs_total{outcome="completed"}[5m]))')).toBeGreaterThan(0.9);
    expect(await one('scribed_decode_backlog_seconds')).toBe(0);
    expect(await one('sum(scribed_http_errors_total{code="ACCOUNT_STREAM_LIMIT", status_code="429"})')).toBe(1);
    expect(await one('sum(scribed_ws_upgrades_total{socket="stream", outcome="refused"})')).toBe(3);
    expect(await one('sum(scribed_ws_upgrades_total{socket="watch", outcome="upgraded"})')).toBe(1);
    expect(await one('max(scribed_http_request_duration_seconds_bucket{le="600"})')).toBeGreaterThan(0);
  });

  it("loads the alert rules: every rule evaluates without error, and the RTP call's 4% loss makes its alert pending", async () => {
    const rules = await prom.get<{ groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> }>('rules');
    const all = rules.groups.flatMap((g) => g.rules);
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual([]);
    const alerts = await prom.get<{ alerts: Array<{ labels: Record<string, string>; state: string }> }>('alerts');
    // (On a loaded machine a final can take over 2.5 s, so the latency budget alerts may be
    // pending too: only the loss alert is certain.)
    expect(alerts.alerts.map((a) => `${a.labels.alertname} ${a.labels.instance} ${a.state}`)).toContain(
      `ScribedRtpPacketLoss ${new URL(rtpMetricsUrl).host} pending`,
    );
  });

  it('promtool check metrics is clean on the node and the daemons', async () => {
    for (const url of [`${base}/metrics`, rtpMetricsUrl, gatewayMetricsUrl]) {
      const text = await (await fetch(url, url.startsWith(base) ? { headers: { authorization: `Bearer ${METRICS_TOKEN}` } } : {})).text();
      expect(text.length).toBeGreaterThan(1000);
      expect(promtoolCheckMetrics(text), url).toBe('');
    }
  });
}, 180_000);
