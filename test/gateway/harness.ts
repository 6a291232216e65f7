// End-to-end harness for `scribed gateway`: a real `scribed serve` process, a real gateway
// process (dist/cli.js), its JSON log lines, and what the server holds for each leg. The
// conversation the protocol clients send: party A says clip A, then party B says clip B, each
// leg carrying silence while its party listens (as a PBX sends both directions all along).
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { CLI, createAccount, freePort, serve } from '../helpers/serve-process.js';
import { tempDir } from '../helpers/service.js';
import { loadClips, type Clip } from '../helpers/audio.js';
import { rawPcm } from '../helpers/speech-fixtures.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { API_BASE } from '../../src/core/protocol.js';

export interface LogLine {
  msg: string;
  speaker?: string;
  sessionId?: string;
  transcriptionId?: string;
  callId?: string | null;
  receivedSamples?: number;
  serverCapturedSamples?: number | null;
  [k: string]: unknown;
}

const SERVE_ARGS = ['--max-streams-per-account', '0'];

export const PBX_TOKEN = 'pbx-token-for-the-gateway-tests-0001';

export class GatewayProcess {
  readonly lines: LogLine[] = [];
  private waiters: Array<() => void> = [];
  exited: Promise<number | null>;

  constructor(readonly proc: ChildProcess) {
    readline.createInterface({ input: proc.stderr! }).on('line', (line) => {
      if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[gateway] ${line}\n`);
      try {
        this.lines.push(JSON.parse(line) as LogLine);
      } catch {
        this.lines.push({ msg: line });
      }
      for (const w of this.waiters.splice(0)) w();
    });
    this.exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
  }

  /** Resolves with the lines matching `pred` once there are `count` of them. */
  async waitFor(pred: (l: LogLine) => boolean, count = 1, timeoutMs = 30_000): Promise<LogLine[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.filter(pred);
      if (found.length >= count) return found;
      if (Date.now() > deadline)
        throw new Error(`gateway log: timed out waiting (${found.length}/${count}); last lines: ${JSON.stringify(this.lines.slice(-5))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 200);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

export interface Rig {
  baseUrl: string;
  accessKey: string;
  dataDir: string;
  serverPort: number;
  wsPort: number;
  asPort: number;
  outDir: string;
  children: Set<ChildProcess>;
  server: ChildProcess;
  startGateway(extra?: string[]): Promise<GatewayProcess>;
  restartServer(): Promise<void>;
}

export async function startRig(): Promise<Rig> {
  const children = new Set<ChildProcess>();
  const dataDir = tempDir('scribed-gateway-');
  const serverPort = await freePort();
  // One account streams both legs of every call: lift the per-account stream limit, as a
  // single-tenant gateway host does (docs/gateway.md).
  const server = await serve(dataDir, serverPort, children, SERVE_ARGS);
  const accessKey = createAccount(dataDir);
  const wsPort = await freePort();
  const asPort = await freePort();
  const outDir = tempDir('scribed-gateway-out-');
  const rig: Rig = {
    baseUrl: `http://127.0.0.1:${serverPort}`,
    accessKey,
    dataDir,
    serverPort,
    wsPort,
    asPort,
    outDir,
    children,
    server,
    async startGateway(extra = []) {
      const proc = spawn(
        process.execPath,
        [
          CLI,
          'gateway',
          '--url',
          rig.baseUrl,
          '--listen',
          `127.0.0.1:${wsPort}`,
          '--audiosocket',
          `127.0.0.1:${asPort}`,
          '--out',
          outDir,
          '--audiosocket-speaker',
          '1=customer',
          '--audiosocket-speaker',
          '2=agent',
          ...extra,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SCRIBED_ACCESS_KEY: accessKey, SCRIBED_GATEWAY_TOKEN: PBX_TOKEN } },
      );
      children.add(proc);
      proc.once('exit', () => children.delete(proc));
      const g = new GatewayProcess(proc);
      await g.waitFor((l) => l.msg === 'scribed gateway listening', 1, 20_000);
      return g;
    },
    async restartServer() {
      rig.server = await serve(dataDir, serverPort, children, SERVE_ARGS);
    },
  };
  return rig;
}

export async function stopAll(children: Set<ChildProcess>): Promise<void> {
  await Promise.all(
    [...children].map(
      (c) =>
        new Promise<void>((resolve) => {
          c.once('exit', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
}

// ------------------------------------------------------------------ the conversation

export const CLIPS = (() => {
  const all = loadClips();
  return { a: all.find((c) => c.id === 'librivox-0880')!, b: all.find((c) => c.id === 'librivox-0930')! };
})();

/** Silence between the two turns, and before/after, seconds. */
const LEAD = 0.3;
const TURN_GAP = 0.6;

/** The two legs' 16-bit PCM at `rate`, equal length: A speaks, then B answers. */
export function conversationPcm(rate: number): { a: Int16Array; b: Int16Array; aSpeechStartMs: number; bSpeechStartMs: number } {
  const pa = pcmOf(CLIPS.a, rate);
  const pb = pcmOf(CLIPS.b, rate);
  const lead = Math.round(LEAD * rate);
  const gap = Math.round(TURN_GAP * rate);
  const total = lead + pa.length + gap + pb.length + lead;
  const a = new Int16Array(total);
  const b = new Int16Array(total);
  a.set(pa, lead);
  b.set(pb, lead + pa.length + gap);
  return { a, b, aSpeechStartMs: (lead / rate) * 1000, bSpeechStartMs: ((lead + pa.length + gap) / rate) * 1000 };
}

function pcmOf(clip: Clip, rate: number): Int16Array {
  const buf = rawPcm(clip.wavFile, rate);
  return new Int16Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Wait until `sent` units of media time are due at `speed` times real time. */
export async function pace(t0: number, mediaMs: number, speed: number): Promise<void> {
  const wait = t0 + mediaMs / speed - Date.now();
  if (wait > 0) await sleep(wait);
}

// ------------------------------------------------------------------ what the server holds

export interface Segment {
  speaker: string;
  text: string;
  startMs: number;
}

async function api<T>(rig: Rig, path: string): Promise<T> {
  const res = await fetch(`${rig.baseUrl}${API_BASE}${path}`, { headers: { accessKey: rig.accessKey } });
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: T }).data;
}

export async function sessionView(
  rig: Rig,
  sessionId: string,
): Promise<{ capturedSamples: string; status: string; transcriptionId: string }> {
  return api(rig, `/stt/realtime/sessions/${sessionId}`);
}

/** The call's merged transcript from the calls API (every leg's finals by start time, each
 * with its speaker), and the call's external id. */
export async function mergedTranscript(rig: Rig, callId: string): Promise<{ externalId: string | null; segments: Segment[] }> {
  const res = await fetch(`${rig.baseUrl}${API_BASE}/stt/calls/${callId}/transcript?format=json`, {
    headers: { accessKey: rig.accessKey },
  });
  if (res.status !== 200) throw new Error(`transcript of call ${callId}: ${res.status} ${await res.text()}`);
  const t = (await res.json()) as { externalId: string | null; segments: Segment[] };
  return {
    externalId: t.externalId,
    segments: t.segments.filter((x) => x.text.trim() !== '').map((x) => ({ speaker: x.speaker, text: x.text, startMs: x.startMs })),
  };
}

/** The call as GET .../stt/calls/{id} answers it (its externalId, agentId, legs). */
export async function callView(rig: Rig, callId: string): Promise<{ externalId: string | null; agentId: string | null }> {
  const res = await fetch(`${rig.baseUrl}${API_BASE}/stt/calls/${callId}`, { headers: { accessKey: rig.accessKey } });
  if (res.status !== 200) throw new Error(`call ${callId}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { externalId: string | null; agentId: string | null } }).data;
}

export function legText(merged: Segment[], speaker: string): string {
  return merged
    .filter((s) => s.speaker === speaker)
    .map((s) => s.text)
    .join(' ');
}

export function werOf(merged: Segment[], speaker: string, clip: Clip): number {
  return wordErrorRate(clip.reference, legText(merged, speaker)).wer;
}

/** The figures a test reports: per leg, samples sent vs held, and WER. */
export function report(protocol: string, rows: Array<{ speaker: string; sent: number; held: number; wer: number }>): void {
  for (const r of rows)
    process.stderr.write(`[gateway figures] ${protocol} ${r.speaker}: sent ${r.sent} held ${r.held} WER ${r.wer.toFixed(3)}\n`);
}
