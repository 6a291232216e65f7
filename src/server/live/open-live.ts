// Opening live sessions for an adapter: the one way every socket that streams into sessions
// (the native stream socket, Deepgram's live socket, and the on-ramps and facades to come)
// creates them, is admitted, claims them and attaches to them, so each rule is written once
// (docs/architecture.md, "Driving a session from an adapter"). Before the upgrade: openLive
// (the account's places, a recognizer or room to defer, the sessions created or taken). After
// it: attachLive (the sockets attached; a refusal closes the socket and lets the claims go).
// Each adapter phrases the refusals in its own API's shape.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { ScribedError, toScribedError } from '../../core/errors.js';
import { CLOSE_CODES } from '../../core/protocol.js';
import { newId } from '../../core/ids.js';
import { requestHash, validateCreateSession, withRedactionDefault } from '../../core/session-options.js';
import { applyRecognizerCapabilities } from '../../core/recognizer-capabilities.js';
import { accountStreamLimit } from '../../core/account-streams.js';
import { sessionRequestHashWithCall, type CallLink } from '../../core/calls.js';
import type { CreateSessionOutcome } from '../../store/store.js';
import type { LiveSession } from '../../session/live-session.js';
import type { SessionDriver } from '../../session/session-driver.js';
import { accountStreamsOf } from '../account-admission.js';
import type { AppContext } from '../context.js';

export interface CreateLiveSession {
  accountId: string;
  /** The create request's session fields (title, languageHint, options), as POST .../sessions
   * takes them. */
  body: unknown;
  call: CallLink | null;
  /** The client's Idempotency-Key; absent: a fresh one (each socket its own session). */
  idempotencyKey?: string;
}

/** A real-time session created as POST .../sessions creates one: validated, within the
 * recognizer's capabilities, with the account's default redact policies added
 * (docs/redaction.md). An idempotent replay answers the stored session. */
export async function createLiveSession(ctx: AppContext, o: CreateLiveSession): Promise<CreateSessionOutcome> {
  const valid = applyRecognizerCapabilities(validateCreateSession(o.body), {
    languages: ctx.engine.info.languages,
    detectsLanguage: ctx.engine.info.detectsLanguage ?? false,
  });
  const now = ctx.now();
  const outcome = await ctx.store.createSession({
    accountId: o.accountId,
    idempotencyKey: o.idempotencyKey ?? `live-${randomUUID()}`,
    requestHash: sessionRequestHashWithCall(requestHash(o.body), o.call),
    sampleRateHz: valid.effectiveOptions.sampleRateHz,
    call: o.call,
    session: {
      id: newId('rts', now),
      accountId: o.accountId,
      transcriptionId: newId('stt', now),
      title: valid.title,
      languageHint: valid.languageHint,
      options: withRedactionDefault(
        valid.effectiveOptions,
        (await ctx.store.getRedactionDefault(o.accountId))?.policies,
      ) as unknown as Record<string, unknown>,
      createdAt: now.toISOString(),
    },
  });
  if (outcome.kind === 'created') ctx.metrics.sessionsCreated.inc();
  return outcome;
}

/** How an adapter words a refusal before the upgrade (its API's error shape). */
export interface LiveRefusals {
  /** The account already streams its limit of sessions on this node. */
  streamLimit(limit: number): Error;
  /** No recognizer for the socket, and no room to defer its recognition. */
  engineBusy(): Error;
}

export interface OpenLive {
  accountId: string;
  /** The session a socket streams into (the native socket: created before, by POST), or how
   * many to create and how (a facade: one per channel, made at its handshake). */
  target: { sessionId: string } | { count: number; create: () => Promise<string[]> };
  refusals: LiveRefusals;
}

/** Sessions claimed for one socket, with its account places held until attachLive settles. */
export interface LiveOpening {
  sessions: LiveSession[];
  /** Gives the account's places back to the count (the attached sessions count from then on). */
  settle(): void;
}

/** Before the upgrade: the account's places on this node (one per session), a recognizer for
 * each (free, held by a paused session, or room to defer), then the sessions created or taken
 * and claimed for this node. Refused before the upgrade, so a balancer retries another node
 * (docs/scaling.md). */
export async function openLive(ctx: AppContext, req: FastifyRequest, o: OpenLive): Promise<LiveOpening> {
  const target = o.target;
  // A draining node (src/server/drain.ts) takes no new socket: a 503 the balancer retries on
  // another node (a facade words it as its busy answer).
  if (ctx.draining?.())
    throw 'sessionId' in target
      ? new ScribedError('NODE_DRAINING', 'this node is draining before it stops; another node takes the socket')
      : o.refusals.engineBusy();
  const served = 'sessionId' in target ? ctx.sessions.served(target.sessionId) : undefined;
  const count = 'sessionId' in target ? 1 : target.count;
  const settle = admit(
    ctx,
    req,
    o.accountId,
    'sessionId' in target ? [target.sessionId] : Array.from({ length: count }, () => `live-${randomUUID()}`),
    o.refusals,
  );
  const taken: LiveSession[] = [];
  try {
    // Before the recognizer check: an account at its limit is told so, not ENGINE_BUSY. A
    // session served here that holds a recognizer (or defers) needs none.
    const needs = served?.holdsDecoder || served?.isDeferred ? 0 : count;
    if (!ctx.sessions.hasRoomFor(needs)) throw o.refusals.engineBusy();
    if ('sessionId' in target) {
      // The socket's node serves the session: it claims it (SESSION_BUSY while another node's
      // socket holds this epoch) and, if it came from elsewhere, restores it.
      const session = await ctx.sessions.take(target.sessionId, o.accountId);
      if (!session) throw new ScribedError('NOT_FOUND', `session ${target.sessionId} does not exist`);
      if (session.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
      if (session.state === 'PAUSED') throw new ScribedError('RESUME_REQUIRED');
      if (session.hasSocket) throw new ScribedError('SESSION_BUSY');
      return { sessions: [session], settle };
    }
    for (const sessionId of await target.create()) {
      const session = await ctx.sessions.take(sessionId, o.accountId);
      if (!session) throw new ScribedError('INTERNAL', `session ${sessionId} vanished after its creation`);
      taken.push(session);
    }
    return { sessions: taken, settle };
  } catch (err) {
    settle();
    // Sessions made for this socket and claimed: let the claims go at once.
    for (const session of taken) await ctx.sessions.releaseIfIdle(session).catch(() => undefined);
    throw err;
  }
}

/** One of the account's places on this node for each of `ids`, or the limit's refusal. The
 * returned settle() is called once the sockets are attached (their sessions count from then
 * on) or refused, or when the connection ends first (an upgrade lost on the way). */
function admit(ctx: AppContext, req: FastifyRequest, accountId: string, ids: string[], refusals: LiveRefusals): () => void {
  const accountStreams = accountStreamsOf(ctx);
  const limit = accountStreamLimit(ctx.config.maxStreamsPerAccount);
  const streaming = ctx.sessions
    .all()
    .filter((s) => s.accountId === accountId && s.hasSocket)
    .map((s) => s.id);
  const admitted: string[] = [];
  let settled = false;
  const settle = () => {
    if (settled) return;
    settled = true;
    for (const id of admitted) accountStreams.settle(accountId, id);
  };
  for (const id of ids) {
    if (!accountStreams.tryAdmit(accountId, id, limit, streaming)) {
      settle();
      throw refusals.streamLimit(limit);
    }
    admitted.push(id);
  }
  req.raw.socket.once('close', settle);
  return settle;
}

export interface AttachLive {
  socket: WebSocket;
  log: FastifyBaseLogger;
  /** Sends the refusal in the adapter's shape before the socket closes. */
  sendError(e: ScribedError): void;
}

/** After the upgrade: every driver's sink attached to its session (the socket's handlers are
 * installed before, so commands queue behind the attach and are dropped if it fails). True
 * once all attached; on a refusal the refused sessions' claims are let go (another node can
 * take the socket at once), the first refusal is sent and the socket closed: 1013 for
 * ENGINE_BUSY (try again later), else 1011. The opening's places are settled either way. */
export async function attachLive(ctx: AppContext, opening: LiveOpening, drivers: SessionDriver[], o: AttachLive): Promise<boolean> {
  const outcomes = await Promise.allSettled(drivers.map((d) => d.session.attach(d.sink)));
  opening.settle();
  const refused = outcomes.flatMap((r, i) =>
    r.status === 'rejected' ? [{ session: drivers[i]!.session, err: toScribedError(r.reason) }] : [],
  );
  if (refused.length === 0) {
    ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'upgraded' });
    return true;
  }
  const e = refused[0]!.err;
  ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'attach_failed' });
  o.log.warn({ code: e.code }, 'socket attach refused');
  for (const { session } of refused)
    void ctx.sessions.releaseIfIdle(session).catch((err: unknown) => o.log.warn({ err }, 'could not release the claim'));
  if (o.socket.readyState === o.socket.OPEN) o.sendError(e);
  o.socket.close(e.code === 'ENGINE_BUSY' ? CLOSE_CODES.tryAgainLater : CLOSE_CODES.internal, e.code);
  return false;
}
