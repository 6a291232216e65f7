// Log lines: JSON wherever they go except a terminal, which gets readable lines; credentials
// scrubbed in both forms. The terminal case runs the real CLI under a pseudo-terminal
// (util-linux `script`), the others through a pipe.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/obs/log.js';
import { tempDir } from '../helpers/service.js';

const CLI = path.resolve(import.meta.dirname, '../../dist/cli.js');
// An API key's shape (src/core/redact.ts): `sk_`, a 16-hex id, `_`, the secret.
const SECRET = 'sk_0123456789abcdef_s3cretS3cretS3cret';
const SECRET_PART = 's3cretS3cretS3cret';

function memory(): { stream: Writable; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => chunks.join('') };
}

/** What a process wrote on `stream` until `text` appeared (then it is stopped), at most 30 s. */
function outputUntil(command: string, args: string[], stream: 'stdout' | 'stderr', text: string): Promise<string> {
  const proc = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SCRIBED_LOG_LEVEL: 'info', NO_COLOR: '1' },
  });
  let out = '';
  return new Promise<string>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      proc.kill('SIGTERM');
      resolve(out);
    };
    const timer = setTimeout(done, 30_000);
    proc[stream].on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(text)) done();
    });
    proc.once('exit', done);
  });
}

/** `scribed rtp` logs its listening line at once. */
function rtpArgs(dir: string): string[] {
  const keyFile = path.join(dir, 'key');
  fs.writeFileSync(keyFile, `${SECRET}\n`);
  return ['rtp', '--listen', '127.0.0.1:0', '--rtcp-port', 'none', '--url', 'http://127.0.0.1:9', '--access-key-file', keyFile];
}

describe('log lines', () => {
  it('are JSON when forced not to be a terminal, and readable when forced to be one', async () => {
    const json = memory();
    createLogger({ destination: json.stream as never, terminal: false }).info({ accessKey: SECRET, streams: 3 }, 'hello');
    const rec = JSON.parse(json.text().trim()) as Record<string, unknown>;
    expect(rec).toMatchObject({ msg: 'hello', streams: 3, accessKey: '[Redacted]', service: 'scribed' });

    const pretty = memory();
    createLogger({ destination: pretty.stream as never, terminal: true }).info(
      { url: `http://x/?accessKey=${SECRET}`, streams: 3 },
      'hello',
    );
    await new Promise((resolve) => setImmediate(resolve));
    const text = pretty.text();
    expect(() => JSON.parse(text.trim())).toThrow();
    expect(text).toMatch(/INFO.*hello/);
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hello {.*"streams":3.*}\n$/);
    expect(text).not.toContain(SECRET_PART);
  });

  it("name their service, and a terminal's lines leave out the fields every line shares (the stream client's set-up)", async () => {
    const json = memory();
    createLogger({ destination: json.stream as never, terminal: false, service: 'scribed-stream' }).warn(
      { streamId: 's1', err: `refused ${SECRET}` },
      'x',
    );
    const rec = JSON.parse(json.text().trim()) as Record<string, unknown>;
    expect(rec).toMatchObject({ service: 'scribed-stream', streamId: 's1' });
    expect(json.text()).not.toContain(SECRET_PART);

    const pretty = memory();
    createLogger({ destination: pretty.stream as never, terminal: true, service: 'scribed-stream', hiddenOnTerminal: ['streamId'] }).warn(
      { streamId: 's1', streams: 2 },
      'x',
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(pretty.text()).toContain('"streams":2');
    expect(pretty.text()).not.toContain('streamId');
  });

  it('a CLI writing to a pipe (journald, a file) writes JSON', async () => {
    const out = await outputUntil(process.execPath, [CLI, ...rtpArgs(tempDir())], 'stderr', 'rtp receiver listening');
    const first = out.split('\n').find((l) => l.trim() !== '')!;
    expect(JSON.parse(first)).toMatchObject({ msg: 'rtp receiver listening', component: 'rtp' });
  });

  it('a CLI writing to a terminal writes readable lines', async () => {
    const command = [process.execPath, CLI, ...rtpArgs(tempDir())].map((a) => `'${a}'`).join(' ');
    // `script` runs the command on a new pseudo-terminal and copies what it writes to stdout.
    const out = await outputUntil('script', ['-qfc', command, '/dev/null'], 'stdout', 'rtp receiver listening');
    const listening = out.split(/\r?\n/).find((l) => l.includes('rtp receiver listening'));
    expect(listening).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO.*: rtp receiver listening/);
    expect(out).not.toContain('{"level"');
    expect(out).not.toContain(SECRET_PART);
  });
});
