// Debian's real Prometheus as a plain process for tests: its own config and storage in a temp
// dir, scraping the given targets every second, answering PromQL over its HTTP API.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from './serve-process.js';
import { tempDir } from './service.js';

export interface PromTarget {
  job: string;
  targets: string[];
  /** A file holding the bearer token the targets ask for (scribed's --metrics-token-file). */
  bearerTokenFile?: string;
}

export interface PromSample {
  metric: Record<string, string>;
  values: Array<[number, string]>;
}

export class Prometheus {
  private constructor(
    readonly proc: ChildProcess,
    readonly url: string,
    private readonly dir: string,
  ) {}

  /** Start Prometheus with these scrape jobs (1 s scrapes and rule evaluation) and rule files. */
  static async start(jobs: PromTarget[], ruleFiles: string[] = []): Promise<Prometheus> {
    const dir = tempDir('scribed-prometheus-');
    const port = await freePort();
    const config = [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      ...ruleFiles.map((f) => `  - ${JSON.stringify(f)}`),
      'scrape_configs:',
      ...jobs.flatMap((j) => [
        `  - job_name: ${j.job}`,
        ...(j.bearerTokenFile
          ? ['    authorization:', '      type: Bearer', `      credentials_file: ${JSON.stringify(j.bearerTokenFile)}`]
          : []),
        '    static_configs:',
        `      - targets: ${JSON.stringify(j.targets)}`,
      ]),
    ].join('\n');
    fs.writeFileSync(path.join(dir, 'prometheus.yml'), `${config}\n`);
    const proc = spawn(
      'prometheus',
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const stderr: string[] = [];
    proc.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
    const prom = new Prometheus(proc, `http://127.0.0.1:${port}`, dir);
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`prometheus exited (${proc.exitCode}): ${stderr.join('')}`);
      const ready = await fetch(`${prom.url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) return prom;
      if (Date.now() > deadline) throw new Error(`prometheus not ready in 20 s: ${stderr.join('')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private async api<T>(endpoint: string, params: Record<string, string>): Promise<T> {
    const res = await fetch(`${this.url}/api/v1/${endpoint}`, { method: 'POST', body: new URLSearchParams(params) });
    const body = (await res.json()) as { status: string; data: T; error?: string; errorType?: string };
    if (body.status !== 'success') throw new Error(`${body.errorType ?? 'error'}: ${body.error ?? res.status}`);
    return body.data;
  }

  /** An instant query's vector, as [labels, value] pairs. */
  async query(expr: string): Promise<Array<{ metric: Record<string, string>; value: number }>> {
    const data = await this.api<{ resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> }>(
      'query',
      { query: expr },
    );
    return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** A range query from `startMs` to now, one point per `stepS`. */
  async queryRange(expr: string, startMs: number, stepS = 1): Promise<PromSample[]> {
    const data = await this.api<{ result: PromSample[] }>('query_range', {
      query: expr,
      start: String(startMs / 1000),
      end: String(Date.now() / 1000),
      step: `${stepS}s`,
    });
    return data.result;
  }

  async get<T>(endpoint: string): Promise<T> {
    const res = await fetch(`${this.url}/api/v1/${endpoint}`);
    return ((await res.json()) as { data: T }).data;
  }

  /** Wait until `expr` returns a sample for which `pred` holds. */
  async waitFor(expr: string, pred: (v: number) => boolean, timeoutMs = 20_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = (await this.query(expr)).find((s) => pred(s.value));
      if (hit) return hit.value;
      if (Date.now() > deadline)
        throw new Error(`${expr} did not reach the expected value in ${timeoutMs} ms: ${JSON.stringify(await this.query(expr))}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  stop(): Promise<void> {
    if (this.proc.exitCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.kill('SIGTERM');
    return exited.then(() => fs.rmSync(this.dir, { recursive: true, force: true }));
  }
}
