// The one way the service sends a request on a user's behalf (voice design callbacks, webhook
// deliveries and Deepgram callbacks, and the audio URL of a Deepgram-style pre-recorded request,
// src/server/facades/deepgram): an HTTP(S) POST or GET whose destination is checked against the
// operator's policy (src/core/outbound-policy.ts) at connect time.
//
//  - An IP literal in the URL is checked before anything is sent (node:net never resolves a
//    literal, so the check below would not see it).
//  - A name is resolved by the `lookup` node:net calls while it connects, and only addresses
//    the policy allows are handed back: the addresses checked are the addresses connected to,
//    with no second resolution in between, so a DNS answer that changes (rebinding) cannot
//    pass a check and then connect elsewhere. Host header and TLS SNI keep the name.
//  - The connected socket's peer address is checked once more before the request is
//    treated as answered (a guard against any path that bypassed the lookup).
//  - Redirects are never followed (node:http does not follow them): a 3xx is an answer.
//  - No proxy and no connection reuse (agent: false).
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { OutboundPolicy } from '../core/outbound-policy.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses (the seam tests use to script DNS answers). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** The destination is not one the operator allows; `detail` is for the server log only.
 * `byUrl`: the URL alone said so (an IP literal, a loopback or metadata name, the scheme),
 * which a client may be told, since it tells them nothing they did not write; a refusal found
 * only after resolving a name (or at the connected peer) must reach a client as a plain
 * failure, or the answer would say what an internal name resolves to (outboundOutcome). */
export class DestinationRefused extends Error {
  constructor(
    readonly detail: string,
    readonly byUrl = false,
  ) {
    super(`destination not allowed: ${detail}`);
    this.name = 'DestinationRefused';
  }
}

/** What a client is told of an outbound attempt: the whole vocabulary. Addresses, errno
 * values, DNS answers and response bodies go to the server log only (docs/security.md). */
export type OutboundOutcome = 'delivered' | 'refused by policy' | 'failed';

/** The client's word for an attempt that threw. */
export function outboundFailure(err: unknown): Exclude<OutboundOutcome, 'delivered'> {
  return err instanceof DestinationRefused && err.byUrl ? 'refused by policy' : 'failed';
}

export interface PostResult {
  status: number;
  /** The peer address the request was sent to (for the server log). */
  address: string | null;
  /** The first `snippetBytes` of the answer's body, when asked for. */
  snippet?: string;
}

export interface OutboundRequest {
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  /** Read this many bytes of the answer's body (webhook delivery logs); 0 or absent: none. */
  snippetBytes?: number;
}

/** Up to `want` bytes of an answer's body (fewer when it ends first), then the answer is let go. */
function readSnippet(res: http.IncomingMessage, want: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const done = () => {
      res.destroy();
      resolve(Buffer.concat(chunks).subarray(0, want).toString('utf8'));
    };
    res.on('data', (c: Buffer) => {
      chunks.push(c);
      have += c.length;
      if (have >= want) done();
    });
    res.on('end', done);
    res.on('error', done);
    res.on('close', done);
  });
}

export class GuardedTransport {
  constructor(
    private readonly policy: OutboundPolicy,
    private readonly resolve: Resolver = systemResolver,
  ) {}

  /** The lookup handed to node:net: resolve, keep only allowed addresses, refuse if none. */
  lookupFor(url: string): LookupFunction {
    return (hostname, options, callback) => {
      const cb = callback as (err: NodeJS.ErrnoException | null, address: string | ResolvedAddress[], family?: number) => void;
      this.resolve(hostname).then(
        (addresses) => {
          const allowed = addresses.filter((a) => this.policy.checkAddress(a.address).allowed);
          if (allowed.length === 0) {
            const what = addresses.map((a) => `${a.address} (${this.policy.checkAddress(a.address).class})`).join(', ') || 'no address';
            cb(new DestinationRefused(`${new URL(url).host} resolved to ${what}`), []);
            return;
          }
          const wanted = options.family === 4 || options.family === 6 ? allowed.filter((a) => a.family === options.family) : allowed;
          if (wanted.length === 0) {
            cb(Object.assign(new Error(`no IPv${options.family} address allowed for ${hostname}`), { code: 'ENOTFOUND' }), []);
            return;
          }
          if (options.all) cb(null, wanted);
          else cb(null, wanted[0]!.address, wanted[0]!.family);
        },
        (err: NodeJS.ErrnoException) => cb(err, []),
      );
    };
  }

  /** POST `body` to `url`; resolves with the answer's status, rejects with DestinationRefused
   * or the network error. The answer's body is not read, but for `snippetBytes` of it. */
  async post(url: string, req: OutboundRequest): Promise<PostResult> {
    const res = await this.send(
      'POST',
      url,
      { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
      req.body,
      req.signal,
    );
    const address = res.socket?.remoteAddress ?? null;
    const status = res.statusCode ?? 0;
    if (!req.snippetBytes || req.snippetBytes <= 0) {
      res.destroy();
      return { status, address };
    }
    return { status, address, snippet: await readSnippet(res, req.snippetBytes) };
  }

  /** GET `url` under the same checks (fetching audio a client names by URL); resolves with the
   * answer, whose body the caller reads or destroys. */
  get(url: string, req: { headers: Record<string, string>; signal: AbortSignal }): Promise<http.IncomingMessage> {
    return this.send('GET', url, req.headers, null, req.signal);
  }

  private send(
    method: 'GET' | 'POST',
    url: string,
    headers: Record<string, string>,
    body: string | null,
    signal: AbortSignal,
  ): Promise<http.IncomingMessage> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return Promise.reject(new DestinationRefused('not a URL', true));
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return Promise.reject(new DestinationRefused(`scheme ${u.protocol}`, true));
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    const early = this.policy.checkHost(host);
    if (early && !early.allowed) return Promise.reject(new DestinationRefused(`${u.host}: ${early.reason}`, true));

    return new Promise<http.IncomingMessage>((resolve, reject) => {
      const options: https.RequestOptions = {
        protocol: u.protocol,
        hostname: host,
        port: u.port || undefined,
        path: `${u.pathname}${u.search}`,
        method,
        headers: { ...headers, host: u.host },
        agent: false,
        lookup: this.lookupFor(url),
        signal,
      };
      if (u.protocol === 'https:' && early === null) options.servername = host;
      const r = (u.protocol === 'https:' ? https : http).request(options, resolve);
      r.on('socket', (socket: Socket) => {
        const check = () => {
          const peer = socket.remoteAddress;
          const verdict = peer ? this.policy.checkAddress(peer) : null;
          if (!verdict || !verdict.allowed) r.destroy(new DestinationRefused(`${u.host} connected to ${peer ?? 'an unknown address'}`));
        };
        if (socket.remoteAddress) check();
        else socket.once('connect', check);
      });
      r.on('error', reject);
      if (body === null) r.end();
      else r.end(body);
    });
  }
}
