// The alert rules as Prometheus reads them: `promtool check rules` and `check config` clean,
// `promtool test rules` green, and every alert with a unit test that fires it and one that
// does not, a runbook section in docs/operations.md, and only metrics the code exports.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/obs/metrics.js';
import { ClientMetrics } from '../../src/client/metrics.js';
import { createRtpMetrics } from '../../src/rtp/metrics.js';
import { createGatewayMetrics } from '../../src/gateway/metrics.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIR = path.join(ROOT, 'deploy/prometheus');
const RULES = path.join(DIR, 'scribed-rules.yml');
const TESTS = fs
  .readdirSync(path.join(DIR, 'tests'))
  .filter((f) => f.endsWith('.yml'))
  .map((f) => path.join(DIR, 'tests', f));
const rulesText = fs.readFileSync(RULES, 'utf8');
const testsText = TESTS.map((f) => fs.readFileSync(f, 'utf8')).join('\n');
const ALERTS = [...rulesText.matchAll(/^\s*- alert: (\w+)$/gm)].map((m) => m[1]!);

/** promtool's output, or its failure with the output in the message. */
function promtool(...args: string[]): string {
  try {
    return execFileSync('promtool', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

/** GitHub's anchor for a heading: lower case, spaces to hyphens, punctuation dropped. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');

describe('Prometheus alert rules', () => {
  it("cover the issue's list of conditions", () => {
    expect(ALERTS.length).toBeGreaterThanOrEqual(15);
    for (const metric of [
      'up{job="scribed"}',
      'scribed_ready_checks',
      'scribed_client_audio_buffered_seconds',
      'scribed:recognition_latency_slow:ratio_rate1h',
      'scribed_decode_backlog_seconds',
      'scribed_recognition_deferred_sessions',
      'scribed_http_errors_total',
      'scribed_rtp_packets_lost_total',
    ]) {
      expect(rulesText, metric).toContain(metric);
    }
  });

  it('pass promtool check rules and check config', () => {
    expect(promtool('check', 'rules', RULES)).toMatch(/SUCCESS: \d+ rules found/);
    // The config names the nodes' metrics token file beside it (an operator's secret, not in
    // the repository): checked in a copy with a token file of its own.
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-prometheus-config-'));
    fs.copyFileSync(path.join(DIR, 'prometheus.yml'), path.join(copy, 'prometheus.yml'));
    fs.copyFileSync(RULES, path.join(copy, 'scribed-rules.yml'));
    fs.writeFileSync(path.join(copy, 'scribed-metrics-token'), 'a-token-for-the-check-0123456789\n', { mode: 0o600 });
    const config = promtool('check', 'config', path.join(copy, 'prometheus.yml'));
    fs.rmSync(copy, { recursive: true, force: true });
    expect(config).toContain('is valid prometheus config file syntax');
  });

  it('pass their unit tests (promtool test rules)', () => {
    expect(promtool('test', 'rules', ...TESTS)).toContain('SUCCESS');
  });

  for (const alert of ALERTS) {
    it(`${alert}: a unit test fires it and one holds it back, and docs/operations.md has its runbook`, () => {
      expect(testsText, 'fired').toMatch(new RegExp(`alertname: ${alert}\\n\\s*exp_alerts:\\n\\s*- exp_labels`));
      expect(testsText, 'held back').toMatch(new RegExp(`alertname: ${alert}\\n\\s*exp_alerts: \\[\\]`));
      const ops = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
      expect(ops).toContain(`\n### ${alert}\n`);
      expect(rulesText).toContain(`runbook: docs/operations.md#${anchor(alert)}`);
    });
  }

  it('query only metrics the code exports', async () => {
    const client = new ClientMetrics();
    createRtpMetrics(client.registry);
    createGatewayMetrics(client.registry);
    const names = new Set<string>();
    for (const registry of [createMetrics().registry, client.registry]) {
      for (const m of await registry.getMetricsAsJSON())
        for (const suffix of ['', '_bucket', '_count', '_sum']) names.add(`${m.name}${suffix}`);
    }
    const used = new Set([...rulesText.matchAll(/\b(scribed_[a-z0-9_]+)/g)].map((m) => m[1]!));
    expect([...used].filter((n) => !names.has(n))).toEqual([]);
  });
});
