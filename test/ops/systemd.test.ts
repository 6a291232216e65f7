// The systemd units in systemd/ as an operator installs them: `systemd-analyze verify` must
// accept each (no warnings either), each must keep the sandboxing and restart policy the
// operations docs promise, and each ExecStart must run a command and flags the built CLI has.
//
// verify checks that ExecStart's executable exists. The units name the installed paths
// (/usr/bin/node, /opt/scribed/dist/cli.js); /usr/bin/node is checked as written when it
// exists, and the CLI script (an argument, which verify does not check) is checked here
// against this checkout's build: the same file an install copies to /opt/scribed.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const UNIT_DIR = path.join(ROOT, 'systemd');
const CLI = path.join(ROOT, 'dist/cli.js');
const INSTALLED_NODE = '/usr/bin/node';
const INSTALLED_CLI = '/opt/scribed/dist/cli.js';

const units = fs.readdirSync(UNIT_DIR).filter((f) => f.endsWith('.service'));

/** Directive values of a unit file (a key may repeat). */
function directives(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';') || line.startsWith('[')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq);
    out.set(key, [...(out.get(key) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

function one(d: Map<string, string[]>, key: string): string | undefined {
  return d.get(key)?.at(-1);
}

describe('systemd units', () => {
  it('ships the server, RTP, stream and gateway units', () => {
    expect(units.sort()).toEqual(['scribed-gateway@.service', 'scribed-rtp@.service', 'scribed-stream@.service', 'scribed.service']);
  });

  for (const unit of units) {
    describe(unit, () => {
      const text = fs.readFileSync(path.join(UNIT_DIR, unit), 'utf8');
      const d = directives(text);

      it('passes systemd-analyze verify without a warning', () => {
        const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
        expect(analyze.error, 'systemd-analyze is missing: scripts/setup.sh installs the systemd package').toBeUndefined();
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-units-'));
        // Only when this machine has no /usr/bin/node does the copy name the running node.
        const node = fs.existsSync(INSTALLED_NODE) ? INSTALLED_NODE : process.execPath;
        fs.writeFileSync(path.join(dir, unit), text.replaceAll(INSTALLED_NODE, node));
        const target = unit.endsWith('@.service') ? unit.replace('@.service', '@40000.service') : unit;
        const r = spawnSync('systemd-analyze', ['verify', path.join(dir, target)], { encoding: 'utf8' });
        fs.rmSync(dir, { recursive: true, force: true });
        expect({ status: r.status, stderr: r.stderr.trim(), stdout: r.stdout.trim() }).toEqual({ status: 0, stderr: '', stdout: '' });
      });

      it('restarts on failure, stops gracefully and keeps state in a state directory', () => {
        expect(one(d, 'Restart')).toBe('on-failure');
        expect(one(d, 'KillSignal')).toBe('SIGTERM');
        expect(Number(one(d, 'TimeoutStopSec'))).toBeGreaterThanOrEqual(15);
        expect(one(d, 'StateDirectory')).toMatch(/^scribed/);
        expect(d.get('EnvironmentFile')?.every((f) => f.startsWith('-/etc/scribed/'))).toBe(true);
        expect(d.get('EnvironmentFile')?.length).toBeGreaterThan(0);
      });

      it('runs sandboxed as an unprivileged user', () => {
        expect(one(d, 'DynamicUser')).toBe('yes');
        for (const [key, value] of [
          ['NoNewPrivileges', 'yes'],
          ['ProtectSystem', 'strict'],
          ['ProtectHome', 'yes'],
          ['PrivateTmp', 'yes'],
          ['ProtectKernelTunables', 'yes'],
          ['ProtectKernelModules', 'yes'],
          ['ProtectControlGroups', 'yes'],
          ['RestrictNamespaces', 'yes'],
          ['CapabilityBoundingSet', ''],
          ['UMask', '0077'],
        ] as const) {
          expect(one(d, key), key).toBe(value);
        }
        expect(one(d, 'RestrictAddressFamilies')?.split(/\s+/).sort()).toEqual(['AF_INET', 'AF_INET6', 'AF_UNIX']);
      });

      it('never puts the access key in the unit, its environment or its command line', () => {
        expect(text).not.toMatch(/SCRIBED_ACCESS_KEY\s*=|sk_[A-Za-z0-9]/);
        const exec = one(d, 'ExecStart')!;
        if (/ (rtp|stream) /.test(exec)) {
          expect(one(d, 'LoadCredential')).toBe('access-key:/etc/scribed/access-key');
          expect(exec).toContain('--access-key-file ${CREDENTIALS_DIRECTORY}/access-key');
        }
      });

      it('runs a command of the built CLI with flags it accepts', () => {
        const exec = one(d, 'ExecStart')!;
        const words = exec.split(/\s+/);
        expect(words.slice(0, 2)).toEqual([INSTALLED_NODE, INSTALLED_CLI]);
        expect(fs.existsSync(CLI), 'dist/cli.js is built by scripts/setup.sh').toBe(true);
        const command = words[2]!;
        const help = execFileSync(process.execPath, [CLI, command, '--help'], { encoding: 'utf8' });
        for (const flag of words.filter((w) => w.startsWith('--'))) expect(help, `${command} ${flag}`).toContain(`${flag} `);
      });
    });
  }
});
