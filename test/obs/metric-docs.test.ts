// docs/operations.md's metric tables against the registries: a metric exported but not
// documented, documented but not exported, or documented with another type or other labels
// fails here.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Registry } from 'prom-client';
import { createMetrics } from '../../src/obs/metrics.js';
import { ClientMetrics } from '../../src/client/metrics.js';
import { createRtpMetrics } from '../../src/rtp/metrics.js';
import { createGatewayMetrics } from '../../src/gateway/metrics.js';

const OPERATIONS = path.resolve(import.meta.dirname, '../../docs/operations.md');

interface Row {
  type: string;
  labels: string[];
}

/** The rows of the tables in the "Metrics" section, by metric name. */
function documented(): Map<string, Row> {
  const text = fs.readFileSync(OPERATIONS, 'utf8');
  const section = text.slice(text.indexOf('\n## Metrics\n'), text.indexOf('\n### Grafana\n'));
  const rows = new Map<string, Row>();
  for (const line of section.split('\n')) {
    const m = /^\| `(scribed_[a-z0-9_]+)` \| (\w+) \|([^|]*)\|/.exec(line);
    if (!m) continue;
    expect(rows.has(m[1]!), `${m[1]} is in the tables twice`).toBe(false);
    rows.set(m[1]!, { type: m[2]!, labels: [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((l) => l[1]!) });
  }
  return rows;
}

async function exported(): Promise<Map<string, Row>> {
  const client = new ClientMetrics({ defaults: false });
  createRtpMetrics(client.registry);
  createGatewayMetrics(client.registry);
  const out = new Map<string, Row>();
  for (const registry of [createMetrics({ defaults: false }).registry, client.registry] as Registry[]) {
    for (const m of await registry.getMetricsAsJSON()) {
      const labelNames = (registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
      out.set(m.name, { type: String(m.type), labels: [...labelNames] });
    }
  }
  return out;
}

describe('docs/operations.md metric tables', () => {
  it('list every exported service metric, with its type and labels, and nothing else', async () => {
    const docs = documented();
    const code = await exported();
    expect(code.size).toBeGreaterThan(60);
    expect(
      [...code.keys()].filter((name) => !docs.has(name)),
      'exported but not documented',
    ).toEqual([]);
    expect(
      [...docs.keys()].filter((name) => !code.has(name)),
      'documented but not exported',
    ).toEqual([]);
    for (const [name, row] of code) expect(docs.get(name), name).toEqual(row);
  });
});
