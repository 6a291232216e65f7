// The Grafana dashboards may only query metrics this code exports (the server's, the ingest
// clients' and the RTP receiver's): a renamed metric or a typo in a panel fails here instead
// of as an empty graph in production.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/obs/metrics.js';
import { ClientMetrics } from '../../src/client/metrics.js';
import { createRtpMetrics } from '../../src/rtp/metrics.js';

const GRAFANA_DIR = path.resolve(import.meta.dirname, '../../docs/grafana');
const DASHBOARDS = fs.readdirSync(GRAFANA_DIR).filter((f) => f.endsWith('.json'));

interface Panel {
  title: string;
  targets?: Array<{ expr: string }>;
}

/** Series names a histogram or summary exposes besides its own name. */
const SERIES_SUFFIXES = ['', '_bucket', '_sum', '_count'];

async function exportedSeries(): Promise<Set<string>> {
  const client = new ClientMetrics();
  createRtpMetrics(client.registry);
  const names = new Set<string>();
  for (const registry of [createMetrics().registry, client.registry]) {
    for (const m of await registry.getMetricsAsJSON()) {
      for (const suffix of SERIES_SUFFIXES) names.add(`${m.name}${suffix}`);
    }
  }
  return names;
}

/** Metric names in a PromQL expression: identifiers outside label matchers and strings that
 * are not functions, keywords or label names after `by`/`without`. */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/\{[^}]*\}/g, '')
    .replace(/"[^"]*"/g, '')
    .replace(/\b(by|without)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '');
  return [...stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .map((m) => m[0])
    .filter((name) => !/^(sum|rate|irate|increase|histogram_quantile|avg|max|min|count|topk|by|without|le)$/.test(name));
}

describe('Grafana dashboards', () => {
  it('include the server and the ingest dashboards', () => {
    expect(DASHBOARDS.sort()).toEqual(['scribed-ingest.json', 'scribed-server.json']);
  });

  for (const file of DASHBOARDS) {
    const dashboard = JSON.parse(fs.readFileSync(path.join(GRAFANA_DIR, file), 'utf8')) as { panels: Panel[] };

    it(`${file} has panels, each with at least one query`, () => {
      expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
      for (const p of dashboard.panels) expect(p.targets?.length, p.title).toBeGreaterThan(0);
    });

    it(`${file} queries only metrics the code exports`, async () => {
      const exported = await exportedSeries();
      for (const panel of dashboard.panels) {
        for (const t of panel.targets ?? []) {
          const names = metricNames(t.expr);
          expect(names.length, `${panel.title}: ${t.expr}`).toBeGreaterThan(0);
          for (const name of names) expect(exported.has(name), `${panel.title}: ${name} is not exported`).toBe(true);
        }
      }
    });
  }

  it('the ingest dashboard shows sessions, audio rate, lag, latency, RTP loss and reconnects', () => {
    const dashboard = JSON.parse(fs.readFileSync(path.join(GRAFANA_DIR, 'scribed-ingest.json'), 'utf8')) as { panels: Panel[] };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
    for (const metric of [
      'scribed_client_streams',
      'scribed_rtp_streams',
      'scribed_client_audio_captured_seconds_total',
      'scribed_client_audio_acknowledged_seconds_total',
      'scribed_client_audio_buffered_seconds',
      'scribed_recognition_latency_seconds_bucket',
      'scribed_rtp_packets_lost_total',
      'scribed_rtp_jitter_seconds_bucket',
      'scribed_client_reconnects_total',
    ]) {
      expect(exprs, metric).toContain(metric);
    }
  });

  it('the query parser finds a misspelt metric', () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le, route) (rate(scribed_http_seconds_bucket{route="x"}[5m])))')).toEqual([
      'scribed_http_seconds_bucket',
    ]);
  });
});
