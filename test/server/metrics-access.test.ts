// Who may read /metrics (docs/operations.md, "Metrics"), probed as someone who can reach the API
// port would: without a configured token only a direct loopback request (no proxy header) is
// answered, so a node behind the reference HAProxy (which adds X-Forwarded-For) or listening on
// the network does not hand its counters to anyone; with a token, only its bearer, from anywhere,
// the refusal holding on a reused keep-alive connection.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';

const TOKEN = 'scrape-token-0123456789abcdef';
let open: TestService;
let guarded: TestService;

beforeAll(async () => {
  open = await startService();
  guarded = await startService({ metricsToken: TOKEN });
}, 60_000);
afterAll(async () => {
  await open?.stop();
  await guarded?.stop();
});

const scrape = async (svc: TestService, headers: Record<string, string> = {}) => {
  const res = await fetch(`${svc.baseUrl}/metrics`, { headers });
  const text = await res.text();
  return { status: res.status, text };
};

describe('/metrics (F6)', () => {
  it('without a token: a direct loopback scrape is answered, a proxied one is refused', async () => {
    const direct = await scrape(open);
    expect(direct.status).toBe(200);
    expect(direct.text).toMatch(/^# HELP scribed_/m);
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const proxied = await scrape(open, { [header]: header === 'forwarded' ? 'for=203.0.113.9' : '203.0.113.9' });
      expect(proxied.status, header).toBe(401);
      expect(proxied.text).not.toMatch(/scribed_/);
      expect(JSON.parse(proxied.text).message).toMatch(/SCRIBED_METRICS_TOKEN/);
    }
  });

  it('with a token: only its bearer reads, on the same connection as the refusals', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer wrong-token-0123456789' },
      { authorization: TOKEN },
      { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` },
    ]) {
      const r = await scrape(guarded, headers);
      expect(r.status, JSON.stringify(headers)).toBe(401);
      expect(r.text).not.toMatch(/scribed_/);
    }
    const ok = await scrape(guarded, { authorization: `Bearer ${TOKEN}`, 'x-forwarded-for': '203.0.113.9' });
    expect(ok.status).toBe(200);
    expect(ok.text).toMatch(/^# HELP scribed_/m);
    // Probes stay open: a balancer needs no token.
    expect((await fetch(`${guarded.baseUrl}/readyz`)).status).toBeLessThan(600);
    expect((await fetch(`${guarded.baseUrl}/healthz`)).status).toBe(200);
  });
});
