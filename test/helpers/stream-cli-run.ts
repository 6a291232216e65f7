// One `scribed stream` process (the built CLI) streaming a file to a server, watched from
// outside as an operator would: its JSON log lines (stderr) and its Prometheus counters
// (--metrics-port), which say how much audio it captured and how much the server acknowledged.
// Used by the failover test and bench through HAProxy (test/process/failover-haproxy.test.ts,
// bench/failover-haproxy.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { CLI, type LogRecord } from './cluster.js';
import { freeLoopbackPort } from './haproxy.js';

export interface StreamCliRun {
  proc: ChildProcess;
  /** Every JSON log line so far, parsed (pino: `time` in ms). */
  log: LogRecord[];
  /** Samples captured and acknowledged so far (the CLI's counters, at `rate`). */
  counts(): Promise<{ captured: number; acknowledged: number }>;
  exited: Promise<number | null>;
  /** The --out directory (<sessionId>.jsonl). */
  out: string;
  /** The session's id, once the CLI has logged it. */
  sessionId(timeoutMs?: number): Promise<string>;
}

export interface StreamCliOptions {
  url: string;
  accessKey: string;
  file: string;
  encoding: string;
  rate: number;
  /** A directory for the key file and the transcript (--out, a new one inside). */
  dir: string;
  /** More flags (--realtime, --segment-commit-mode ...). */
  args?: string[];
  /** Print every log line (debugging). */
  echo?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startStreamCli(o: StreamCliOptions): Promise<StreamCliRun> {
  const out = fs.mkdtempSync(path.join(o.dir, 'out-'));
  const keyFile = path.join(o.dir, 'key');
  fs.writeFileSync(keyFile, `${o.accessKey}\n`, { mode: 0o600 });
  const port = await freeLoopbackPort();
  const args = [CLI, 'stream', '--url', o.url, '--input', o.file, '--encoding', o.encoding, '--access-key-file', keyFile, '--out', out];
  args.push('--stream-id', randomUUID(), '--metrics-port', String(port), '--log-level', 'info', ...(o.args ?? []));
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const log: LogRecord[] = [];
  const other: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (line) => {
    if (o.echo) process.stderr.write(`[cli] ${line}\n`);
    if (!line.startsWith('{')) return void other.push(line);
    log.push(JSON.parse(line) as LogRecord);
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const counter = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  const counts = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return {
      captured: Math.round(counter(text, 'scribed_client_audio_captured_seconds_total') * o.rate),
      acknowledged: Math.round(counter(text, 'scribed_client_audio_acknowledged_seconds_total') * o.rate),
    };
  };
  for (let i = 0; ; i++) {
    try {
      await counts();
      break;
    } catch (err) {
      if (i > 400 || proc.exitCode !== null) throw new Error(`the CLI's metrics did not answer: ${String(err)}\n${other.join('\n')}`);
      await sleep(50);
    }
  }
  const sessionId = async (timeoutMs = 30_000) => {
    for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(10)) {
      const id = log.find((r) => typeof r.sessionId === 'string')?.sessionId as string | undefined;
      if (id) return id;
    }
    throw new Error(`the CLI logged no session within ${timeoutMs} ms: ${other.join('\n')}`);
  };
  return { proc, log, counts, exited, out, sessionId };
}

/** The CLI's 'stream finished' record, its finals (--out jsonl) and their words. */
export function streamCliResult(run: StreamCliRun) {
  const f = run.log.find((r) => r.msg === 'stream finished');
  if (!f) throw new Error(`the CLI did not finish: ${JSON.stringify(run.log.slice(-5))}`);
  const finals = fs
    .readFileSync(path.join(run.out, `${f.sessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { text: string; startSample: string; endSample: string });
  return { finished: f, finals, words: finals.flatMap((s) => s.text.split(/\s+/).filter(Boolean)) };
}
