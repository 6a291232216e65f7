// The Grafana dashboard may only query metrics this code exports: a renamed metric or a typo
// in a panel fails here instead of as an empty graph in production.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/obs/metrics.js';

const DASHBOARD = path.resolve(import.meta.dirname, '../../docs/grafana/scribed-server.json');

interface Panel {
  title: string;
  targets?: Array<{ expr: string }>;
}

/** Series names a histogram or summary exposes besides its own name. */
const SERIES_SUFFIXES = ['', '_bucket', '_sum', '_count'];

async function exportedSeries(): Promise<Set<string>> {
  const metrics = createMetrics();
  const names = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    for (const suffix of SERIES_SUFFIXES) names.add(`${m.name}${suffix}`);
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

describe('Grafana dashboard', () => {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };

  it('has panels, each with at least one query', () => {
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
    for (const p of dashboard.panels) expect(p.targets?.length, p.title).toBeGreaterThan(0);
  });

  it('queries only metrics the server exports', async () => {
    const exported = await exportedSeries();
    for (const panel of dashboard.panels) {
      for (const t of panel.targets ?? []) {
        const names = metricNames(t.expr);
        expect(names.length, `${panel.title}: ${t.expr}`).toBeGreaterThan(0);
        for (const name of names) expect(exported.has(name), `${panel.title}: ${name} is not exported`).toBe(true);
      }
    }
  });

  it('the query parser finds a misspelt metric', () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le, route) (rate(scribed_http_seconds_bucket{route="x"}[5m])))')).toEqual([
      'scribed_http_seconds_bucket',
    ]);
  });
});
