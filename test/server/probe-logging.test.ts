// Health probes and metric scrapes are not logged at info on every call; other
// requests still are.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturedLogger, startService, type TestService } from '../helpers/service.js';

let svc: TestService;
const lines: string[] = [];

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1, logger: capturedLogger('info', lines) });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

describe('request logging of probes', () => {
  it('/healthz, /readyz and /metrics leave no request lines; an API request does', async () => {
    lines.length = 0;
    for (const path of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${svc.baseUrl}${path}`)).status).toBeLessThan(600);
    await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions`);
    const urls = lines
      .map((l) => JSON.parse(l) as { req?: { url?: string }; msg?: string })
      .filter((r) => r.req?.url)
      .map((r) => r.req!.url);
    expect(urls.some((u) => u!.startsWith('/sound_clone/api/v1/stt/transcriptions'))).toBe(true);
    expect(urls.filter((u) => ['/healthz', '/readyz', '/metrics'].includes(u!))).toEqual([]);
  });
});
