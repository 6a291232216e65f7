// The streamer's connection: one socket at a time to the session's stream endpoint, and the
// reconnect policy around it (docs/ingest.md): after a socket ends without the session being
// closed, resume and connect again, the first time after a socket that worked at once (a few
// ms of jitter), then after an exponential backoff with jitter (backoff.ts); a
// refused handshake is mapped to what it means (handshakeOutcome). What the socket carries is
// the streamer's business, through the hooks.
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { API_BASE, parseServerEvent, type ServerEvent } from '../core/protocol.js';
import { backoffDelay, reconnectDelay, type BackoffPolicy } from './backoff.js';
import { codeOf, readBody, RetryableError, safeMessage, StreamFatalError } from './session-http.js';

/** What a refused socket upgrade means: the session closed by this client's own close (while
 * it is ending), a refusal no retry mends (bad key, unknown or closed session), or something a
 * resume and another try get past (RESUME_REQUIRED, SESSION_BUSY, 5xx). */
export function handshakeOutcome(status: number, body: string, ending: boolean): 'closed' | StreamFatalError | RetryableError {
  const json = readBody(body);
  const code = codeOf(json);
  if (code === 'SESSION_CLOSED' && ending) return 'closed';
  if (status === 401 || status === 404 || code === 'SESSION_CLOSED')
    return new StreamFatalError(code, `socket refused: HTTP ${status} ${json?.message ?? ''}`, status);
  return new RetryableError(`socket refused: HTTP ${status} ${json?.message ?? ''}`);
}

export interface ConnectionHooks {
  /** The loop stops: stopped, closed, or failed. */
  finished(): boolean;
  ending(): boolean;
  /** Resume the session before the next socket (after a socket ended). */
  resume(): Promise<void>;
  opened(ws: WebSocket): void;
  event(ws: WebSocket, e: ServerEvent): void;
  /** The socket ended (closed, refused or failed); nothing more is sent on it. */
  ended(ws: WebSocket): void;
  /** The handshake was refused with SESSION_CLOSED while ending: the close went through. */
  closedByHandshake(): void;
  fatal(err: StreamFatalError): void;
  reconnecting(): void;
}

export interface ConnectionOptions {
  url: string;
  accessKey: string;
  backoff?: BackoffPolicy;
}

export class StreamConnection {
  /** Reconnect attempts since the last `ready`. */
  private attempt = 0;
  private wake: (() => void) | null = null;
  /** A move in progress: resolves (once the next socket is opened) to that socket's life,
   * boxed (a promise resolved with a bare promise would wait for it), or null on failure. */
  private handing: Promise<{ closed: Promise<void> } | null> | null = null;

  constructor(
    private readonly opts: ConnectionOptions,
    private readonly sessionId: () => string,
    private readonly log: () => Logger,
    private readonly hooks: ConnectionHooks,
  ) {}

  /** A socket got `ready`: the next loss starts the backoff again from its first step. */
  connected(): void {
    this.attempt = 0;
  }

  /** Cut a pause short (end() or abort()). */
  wakeUp(): void {
    this.wake?.();
  }

  /** Wait `ms`, or less if wakeUp() is called. */
  async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.wake = null;
  }

  /** Create the session, retrying with backoff while the server cannot be reached, for at
   * most `timeoutMs`; then fail with UNREACHABLE. A refusal fails at once; `stopped` (an abort)
   * ends the tries with `aborted()`. */
  async establish(create: () => Promise<void>, stopped: () => boolean, aborted: () => Error, timeoutMs: number): Promise<void> {
    const giveUpAt = Date.now() + timeoutMs;
    for (let attempt = 0; ; attempt++) {
      if (stopped()) throw aborted();
      try {
        await create();
        return;
      } catch (err) {
        if (stopped()) throw aborted();
        if (!(err instanceof RetryableError)) throw err;
        const delay = backoffDelay(attempt, this.opts.backoff);
        if (Date.now() + delay > giveUpAt) {
          throw new StreamFatalError(
            'UNREACHABLE',
            `could not create the session at ${this.opts.url} within ${Math.round(timeoutMs / 1000)} s (${safeMessage(err)}): is scribed serve running there? Check --url`,
          );
        }
        this.log().warn({ err: safeMessage(err), delayMs: delay }, 'creating the session failed; retrying');
        await this.pause(delay);
      }
    }
  }

  /** Sockets until the session is closed, the stream stopped, or a fatal failure. */
  async run(): Promise<void> {
    let needResume = false;
    while (!this.hooks.finished()) {
      let failed = false;
      try {
        if (needResume) {
          await this.hooks.resume();
          needResume = false;
        }
        // abort() during the resume: no new socket (it would flush and close the session,
        // since abort() also stops writes by marking the stream as ending).
        if (this.hooks.finished()) break;
        await this.openSocket().closed;
        // A move (handOver) replaced the socket: its successors' lives, one after another.
        while (this.handing) {
          const next = await this.handing;
          this.handing = null;
          if (!next) break;
          await next.closed;
        }
      } catch (err) {
        this.handing = null;
        if (err instanceof StreamFatalError) {
          this.hooks.fatal(err);
          return;
        }
        failed = true;
        this.log().warn({ err: safeMessage(err) }, 'connection attempt failed');
      }
      if (this.hooks.finished()) break;
      needResume = true;
      this.hooks.reconnecting();
      const delay = reconnectDelay(this.attempt, this.opts.backoff);
      this.attempt += 1;
      this.log().info({ delayMs: delay, attempt: this.attempt, failed }, 'reconnecting');
      await this.pause(delay);
    }
  }

  /**
   * The server asked this client to move (a draining node's `reconnect`): make-before-break.
   * Resume (through the balancer, which has taken the draining node out, so another node
   * opens the new epoch), open the next socket, and only once it is open let `old` go. The
   * caller stops sending on `old` first: the resume fences it. If the resume fails, `old` is
   * dropped and the loop resumes as after any loss. Once per move; a second ask is ignored.
   */
  handOver(old: WebSocket): void {
    if (this.handing) return;
    const letGo = () => {
      old.close(1000, 'moved to another node');
      // A close handshake the draining node does not answer must not keep the socket.
      setTimeout(() => old.terminate(), 2_000).unref();
    };
    this.handing = (async (): Promise<{ closed: Promise<void> } | null> => {
      try {
        await this.hooks.resume();
      } catch (err) {
        this.log().warn({ err: safeMessage(err) }, 'resuming to move failed; reconnecting as after a lost socket');
        old.terminate();
        return null;
      }
      const next = this.openSocket();
      // Whether the next socket opened or failed, the old one goes: the resume fenced it.
      void next.opened.then(letGo, letGo);
      next.closed.catch(() => undefined);
      return { closed: next.closed };
    })();
  }

  /** One socket: `opened` once the upgrade is accepted, `closed` when it ends (rejected when
   * it was refused or failed). Its handlers are in place before any event can come. */
  private openSocket(): { opened: Promise<void>; closed: Promise<void> } {
    let markOpened!: () => void;
    let markFailed!: (err: Error) => void;
    const opened = new Promise<void>((resolve, reject) => {
      markOpened = resolve;
      markFailed = reject;
    });
    opened.catch(() => undefined);
    const closed = new Promise<void>((resolve, reject) => {
      const wsUrl = `${this.opts.url.replace(/^http/, 'ws')}${API_BASE}/stt/realtime/sessions/${this.sessionId()}/stream`;
      let ws: WebSocket;
      try {
        ws = new WebSocket(wsUrl, { headers: { accessKey: this.opts.accessKey }, handshakeTimeout: 10_000 });
      } catch (err) {
        // The upgrade request could not be built (an invalid header value): no retry helps.
        const e = new StreamFatalError(
          'VALIDATION_FAILED',
          `the socket request could not be built (${safeMessage(err)}); check that the access key is printable ASCII without spaces`,
        );
        markFailed(e);
        reject(e);
        return;
      }
      this.hooks.opened(ws);
      let settled = false;
      const done = (err?: Error) => {
        if (settled) return;
        settled = true;
        this.hooks.ended(ws);
        markFailed(err ?? new Error('the socket closed before it opened'));
        if (err) reject(err);
        else resolve();
      };
      ws.on('open', () => markOpened());
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          const outcome = handshakeOutcome(res.statusCode ?? 0, body, this.hooks.ending());
          if (outcome === 'closed') {
            this.hooks.closedByHandshake();
            done();
          } else done(outcome);
          ws.terminate();
        });
      });
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        const parsed = parseServerEvent(data.toString());
        if (!parsed.ok) {
          // An event type this client does not know is a newer server's: ignored. A known
          // type without its fields is the server's fault, logged and skipped.
          if (parsed.kind === 'invalid') this.log().warn({ reason: parsed.reason }, 'server sent an event this client cannot read');
          return;
        }
        try {
          this.hooks.event(ws, parsed.event);
        } catch (err) {
          this.log().error({ err }, 'handling a server event failed');
          ws.terminate();
        }
      });
      ws.on('error', (err) => {
        this.log().debug({ err: err.message }, 'socket error');
      });
      ws.on('close', (code, reason) => {
        this.log().info({ code, reason: reason.toString() }, 'socket closed');
        done();
      });
    });
    return { opened, closed };
  }
}
