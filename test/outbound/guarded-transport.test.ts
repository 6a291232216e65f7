// The guarded transport (src/outbound/guarded-transport.ts) against real local HTTP servers and
// a scripted resolver: literal addresses refused before a connection, names checked on the
// answer the connection actually uses (a DNS answer that changes between a check and a
// connect cannot reach a closed address), only allowed addresses of a mixed answer used,
// redirects not followed.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_OUTBOUND_POLICY, OutboundPolicy } from '../../src/core/outbound-policy.js';
import { DestinationRefused, GuardedTransport, type ResolvedAddress } from '../../src/outbound/guarded-transport.js';

interface Hit {
  host: string | undefined;
  path: string | undefined;
  local: string | undefined;
}

/** An HTTP server on 127.0.0.1 that records what reaches it and answers `answer()`. */
class Server {
  readonly hits: Hit[] = [];
  port = 0;
  private readonly server: http.Server;
  constructor(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_q, res) => res.end('ok')) {
    this.server = http.createServer((req, res) => {
      this.hits.push({ host: req.headers.host, path: req.url, local: req.socket.localAddress });
      req.resume();
      req.on('end', () => answer(req, res));
    });
  }
  async start() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }
  stop() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A resolver that answers from a script, one answer per call (the last one repeats). */
function scripted(...answers: string[][]) {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

const request = () => ({ headers: { 'content-type': 'application/json' }, body: '{"designId":"vd_x"}', signal: AbortSignal.timeout(3000) });

const target = new Server();
const elsewhere = new Server();
const redirecting = new Server((_q, res) => {
  res.statusCode = 302;
  res.setHeader('location', `http://127.0.0.1:${elsewhere.port}/moved`);
  res.end();
});

beforeAll(async () => {
  await Promise.all([target.start(), elsewhere.start(), redirecting.start()]);
});
afterAll(async () => {
  await Promise.all([target.stop(), elsewhere.stop(), redirecting.stop()]);
});

describe('the default policy', () => {
  const dns = scripted(['127.0.0.1']);
  const transport = new GuardedTransport(new OutboundPolicy(DEFAULT_OUTBOUND_POLICY), dns.resolve);

  it.each([
    ['IPv4 literal', () => `http://127.0.0.1:${target.port}/x`],
    ['IPv6 loopback', () => `http://[::1]:${target.port}/x`],
    ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${target.port}/x`],
    ['IPv4-mapped IPv6 in hex', () => `http://[::ffff:7f00:1]:${target.port}/x`],
    ['decimal IPv4', () => `http://2130706433:${target.port}/x`],
    ['localhost', () => `http://localhost:${target.port}/x`],
    ['unspecified (reaches loopback on Linux)', () => `http://0.0.0.0:${target.port}/x`],
  ])('refuses %s without connecting', async (_what, url) => {
    const before = target.hits.length;
    await expect(transport.post(url(), request())).rejects.toBeInstanceOf(DestinationRefused);
    expect(target.hits.length).toBe(before);
  });

  it('refuses a name that resolves to loopback, at the connection', async () => {
    const before = dns.calls.length;
    await expect(transport.post(`http://hooks.test:${target.port}/x`, request())).rejects.toThrow(
      /destination not allowed: hooks\.test:\d+ resolved to 127\.0\.0\.1 \(loopback\)/,
    );
    expect(dns.calls.slice(before)).toEqual(['hooks.test']);
    expect(target.hits.filter((h) => h.host?.startsWith('hooks.test'))).toEqual([]);
  });
});

describe('connect-time resolution', () => {
  it('connects to the address the policy checked, under the name (Host header)', async () => {
    const dns = scripted(['127.0.0.1']);
    const transport = new GuardedTransport(new OutboundPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.1/32'] }), dns.resolve);
    const res = await transport.post(`http://receiver.test:${target.port}/named?x=1`, request());
    expect(res).toEqual({ status: 200, address: '127.0.0.1' });
    expect(target.hits.at(-1)).toEqual({ host: `receiver.test:${target.port}`, path: '/named?x=1', local: '127.0.0.1' });
    expect(dns.calls).toEqual(['receiver.test']); // one resolution, used for the connection
  });

  it('cannot be rebound: an answer that changes between attempts never reaches the closed address', async () => {
    // 127.0.0.2 is allowed (nothing listens there on this port); 127.0.0.1, where the target
    // listens, is not. A check that resolved separately from the connection would pass on
    // the first answer and connect on the second.
    const dns = scripted(['127.0.0.2'], ['127.0.0.1']);
    const transport = new GuardedTransport(new OutboundPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.2/32'] }), dns.resolve);
    const before = target.hits.length;
    const first = await transport.post(`http://rebind.test:${target.port}/x`, request()).catch((e: Error) => e);
    expect(first).toBeInstanceOf(Error);
    expect(first).not.toBeInstanceOf(DestinationRefused); // allowed, connected, refused by the host
    expect((first as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    await expect(transport.post(`http://rebind.test:${target.port}/x`, request())).rejects.toThrow(/127\.0\.0\.1 \(loopback\)/);
    expect(dns.calls).toEqual(['rebind.test', 'rebind.test']);
    expect(target.hits.length).toBe(before);
  });

  it('uses only the allowed addresses of a mixed answer', async () => {
    const dns = scripted(['127.0.0.1', '127.0.0.2']);
    const transport = new GuardedTransport(new OutboundPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.2/32'] }), dns.resolve);
    const before = target.hits.length;
    await expect(transport.post(`http://mixed.test:${target.port}/x`, request())).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(target.hits.length).toBe(before);
  });

  it('refuses a name whose every address is closed, even with private ranges open', async () => {
    const dns = scripted(['169.254.169.254', 'fd00:ec2::254']);
    const transport = new GuardedTransport(new OutboundPolicy({ allowPrivate: true, allowCidrs: [] }), dns.resolve);
    await expect(transport.post('http://metadata.test/latest/meta-data/', request())).rejects.toThrow(
      /169\.254\.169\.254 \(metadata\), fd00:ec2::254 \(metadata\)/,
    );
  });
});

describe('the peer-address check', () => {
  it('stops the request before a byte is written when a connection reaches a closed address by any path (here: a lookup that does not filter)', async () => {
    class Unfiltered extends GuardedTransport {
      override lookupFor(): ReturnType<GuardedTransport['lookupFor']> {
        return ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) =>
          options.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) as unknown as ReturnType<
          GuardedTransport['lookupFor']
        >;
      }
    }
    // A raw TCP listener: counts connections and every byte that reaches it.
    let connections = 0;
    let bytes = 0;
    const raw = net.createServer((sock) => {
      connections++;
      sock.on('data', (d) => (bytes += d.length));
      sock.on('error', () => undefined);
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    try {
      const port = (raw.address() as AddressInfo).port;
      const transport = new Unfiltered(new OutboundPolicy(DEFAULT_OUTBOUND_POLICY));
      for (let i = 0; i < 5; i++)
        await expect(transport.post(`http://bypass.test:${port}/x`, request())).rejects.toThrow(/connected to 127\.0\.0\.1/);
      await new Promise((r) => setTimeout(r, 100));
      expect(connections).toBe(5); // the bypass did connect ...
      expect(bytes).toBe(0); // ... but nothing was sent
    } finally {
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });
});

describe('redirects', () => {
  it('are answers, not followed', async () => {
    const transport = new GuardedTransport(new OutboundPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.1/32'] }));
    const before = elsewhere.hits.length;
    const res = await transport.post(`http://127.0.0.1:${redirecting.port}/hook`, request());
    expect(res.status).toBe(302);
    expect(elsewhere.hits.length).toBe(before);
  });
});
