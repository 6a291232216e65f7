// The metric registries as promtool and rate() need them: every labelled counter has its
// series from the start, no gauge is named like a counter, the HTTP histogram reaches the
// request timeout, and a float residue never reads as a backlog.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { Registry } from 'prom-client';
import { HTTP_DURATION_BUCKETS, countHttpError, createMetrics, roundedSeconds } from '../../src/obs/metrics.js';
import { ClientMetrics } from '../../src/client/metrics.js';
import { createRtpMetrics } from '../../src/rtp/metrics.js';
import { createGatewayMetrics } from '../../src/gateway/metrics.js';
import { loadConfig } from '../../src/config.js';

function registries(defaults = true): Array<[string, Registry]> {
  const client = new ClientMetrics({ defaults });
  createRtpMetrics(client.registry);
  createGatewayMetrics(client.registry);
  return [
    ['server', createMetrics({ defaults }).registry],
    ['ingest', client.registry],
  ];
}

describe('metric registries', () => {
  it('start every labelled counter and gauge with its known label values (histograms by route excepted)', async () => {
    for (const [name, registry] of registries(false)) {
      for (const m of await registry.getMetricsAsJSON()) {
        const labelNames = (registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
        if (labelNames.length === 0 || String(m.type) === 'histogram') continue;
        // Set only from a start-up calibration, which a node given --max-decoders never runs;
        // the readiness checks are set by each scrape, before it is answered.
        if (/^scribed_(capacity_streams|capacity_limit_streams|recognizer_cost_ratio|decoder_memory_bytes|ready_checks)$/.test(m.name))
          continue;
        // Labelled by category id: the accounts' own categories, unknown until one is made.
        if (m.name === 'scribed_category_matches_total') continue;
        expect(m.values.length, `${name}: ${m.name} has no series until its first increment`).toBeGreaterThan(0);
        for (const v of m.values) expect(v.value, m.name).toBe(0);
      }
    }
  });

  it("pass promtool check metrics, prom-client's process metrics included", async () => {
    for (const [name, registry] of registries()) {
      const out = execFileSync('promtool', ['check', 'metrics'], { input: await registry.metrics(), encoding: 'utf8' });
      expect(out, name).toBe('');
    }
  });

  it('bucket HTTP durations up to the default request timeout', () => {
    expect(HTTP_DURATION_BUCKETS.at(-1)).toBe(loadConfig({}).requestTimeoutMs / 1000);
  });

  it('count an error answer under its code and the status the error table gives it', async () => {
    const m = createMetrics({ defaults: false });
    countHttpError(m, 'ACCOUNT_STREAM_LIMIT');
    countHttpError(m, 'ENGINE_BUSY');
    const values = (await m.httpErrors.get()).values.filter((v) => v.value > 0).map((v) => v.labels);
    expect(values).toEqual([
      { code: 'ENGINE_BUSY', status_code: '503' },
      { code: 'ACCOUNT_STREAM_LIMIT', status_code: '429' },
    ]);
  });

  it('read a float residue of an emptied backlog as 0, and keep microseconds', () => {
    let backlog = 0;
    for (const rate of [8000, 16000, 8000]) backlog += 0.1 + 1 / rate;
    for (const rate of [8000, 16000, 8000]) backlog -= 0.1 + 1 / rate;
    expect(roundedSeconds(5.55e-17)).toBe(0);
    expect(roundedSeconds(-1e-17)).toBe(0);
    expect(roundedSeconds(backlog)).toBe(0);
    expect(roundedSeconds(1.2345678)).toBe(1.234568);
  });
});
