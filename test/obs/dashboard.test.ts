// The Grafana dashboards may only query metrics this code exports (the server's, the ingest
// clients' and the RTP receiver's): a renamed metric or a typo in a panel fails here instead
// of as an empty graph in production. Every exported service metric has a panel; every panel
// picks its nodes with a variable and rates over $__rate_interval; seconds-per-second panels
// are not in unit `s`. test/ops/prometheus.test.ts runs every query on a real Prometheus.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/obs/metrics.js';
import { audiohookMetrics } from '../../src/server/audiohook/metrics.js';
import { siprecMetrics } from '../../src/server/siprec/metrics.js';
import { ClientMetrics } from '../../src/client/metrics.js';
import { createRtpMetrics } from '../../src/rtp/metrics.js';
import { createGatewayMetrics } from '../../src/gateway/metrics.js';

const GRAFANA_DIR = path.resolve(import.meta.dirname, '../../docs/grafana');
const DASHBOARDS = fs.readdirSync(GRAFANA_DIR).filter((f) => f.endsWith('.json'));

interface Panel {
  title: string;
  type: string;
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: Array<{ expr: string }>;
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown }> };
}

function load(file: string): Dashboard {
  return JSON.parse(fs.readFileSync(path.join(GRAFANA_DIR, file), 'utf8')) as Dashboard;
}

/** Panels that chart something (rows only group them). */
const charts = (d: Dashboard) => d.panels.filter((p) => p.type !== 'row');

/** Series names a histogram or summary exposes besides its own name. */
const SERIES_SUFFIXES = ['', '_bucket', '_sum', '_count'];

async function exportedSeries(): Promise<Set<string>> {
  const client = new ClientMetrics();
  createRtpMetrics(client.registry);
  createGatewayMetrics(client.registry);
  const server = createMetrics().registry;
  // The AudioHook endpoint registers its metrics on the node's registry with its route.
  audiohookMetrics(server);
  // So does the SIPREC recording server, when configured.
  siprecMetrics(server);
  const names = new Set<string>();
  for (const registry of [server, client.registry]) {
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
    const dashboard = load(file);

    it(`${file} has panels, each with at least one query`, () => {
      expect(charts(dashboard).length).toBeGreaterThanOrEqual(10);
      for (const p of charts(dashboard)) expect(p.targets?.length, p.title).toBeGreaterThan(0);
    });

    it(`${file} picks nodes with a variable, and rates over $__rate_interval`, () => {
      const variables = dashboard.templating.list.filter((v) => v.type === 'query').map((v) => v.name);
      expect(variables).toContain('instance');
      for (const p of charts(dashboard)) {
        for (const t of p.targets ?? []) {
          // Every range is Grafana's, which is never shorter than four scrapes.
          for (const range of t.expr.matchAll(/\[([^\]]*)\]/g)) expect(range[1], `${p.title}: ${t.expr}`).toBe('$__rate_interval');
          // Every selector names the node variable: no panel sums nodes the viewer did not pick.
          const selectors = [...t.expr.matchAll(/scribed_[a-z0-9_]+(\{[^}]*\})?/g)];
          for (const sel of selectors)
            expect(sel[1] ?? '', `${p.title}: ${sel[0]}`).toMatch(new RegExp(`instance=~"\\$(${variables.join('|')})"`));
        }
      }
    });

    it(`${file} shows seconds per second as a ratio or a count, never in unit s`, () => {
      for (const p of charts(dashboard)) {
        const perSecond = (p.targets ?? []).some((t) => /rate\(scribed_[a-z0-9_]*seconds_total/.test(t.expr));
        if (perSecond) expect(p.fieldConfig?.defaults?.unit, p.title).not.toBe('s');
      }
    });

    it(`${file} queries only metrics the code exports`, async () => {
      const exported = await exportedSeries();
      for (const panel of charts(dashboard)) {
        for (const t of panel.targets ?? []) {
          const names = metricNames(t.expr);
          expect(names.length, `${panel.title}: ${t.expr}`).toBeGreaterThan(0);
          for (const name of names) expect(exported.has(name), `${panel.title}: ${name} is not exported`).toBe(true);
        }
      }
    });
  }

  it('every service metric the code exports is on a panel of one of them', async () => {
    const exprs = DASHBOARDS.flatMap((f) => charts(load(f)).flatMap((p) => (p.targets ?? []).map((t) => t.expr))).join('\n');
    const client = new ClientMetrics({ defaults: false });
    createRtpMetrics(client.registry);
    createGatewayMetrics(client.registry);
    const families = [
      ...(await createMetrics({ defaults: false }).registry.getMetricsAsJSON()),
      ...(await client.registry.getMetricsAsJSON()),
    ].map((m) => m.name);
    const missing = families.filter((name) => !new RegExp(`\\b${name}(_bucket|_count|_sum)?\\b`).test(exprs));
    expect(missing).toEqual([]);
  });

  it('the ingest dashboard shows sessions, audio rate, lag, latency, RTP loss and reconnects', () => {
    const dashboard = load('scribed-ingest.json');
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
