// The desk session's checks (docs/desk.md): the cookie, the CSRF token and Origin on state
// changes, and the one place the cookie opens native routes: a fixed list of GETs that read.
//
// The native API stays key-authenticated for everything else: installDeskReads runs before
// every route plugin's own hook and, for a GET or HEAD on a listed route that presents the desk
// cookie and no credential, sets the request's account; requireCredential (auth.ts) then lets
// it through. A POST, PUT or DELETE never reaches that branch, whatever it carries.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ScribedError } from '../../core/errors.js';
import { csrfMatches, parseDeskToken } from '../../desk/tokens.js';
import { DESK_COOKIE, DESK_CSRF_HEADER, SESSION_ABSOLUTE_MS, SESSION_IDLE_MS, SESSION_TOUCH_AFTER_MS } from '../../desk/policy.js';
import type { DeskSessionRecord } from '../../store/store.js';
import { headerValue } from '../auth.js';
import { API, type AppContext } from '../context.js';

/** The native reads a desk session may make, as route patterns with parameter names blanked
 * (`:id`), so a route's own parameter name does not matter. Nothing here writes. */
export const DESK_READABLE_ROUTES: ReadonlySet<string> = new Set([
  `${API}/stt/search`,
  `${API}/stt/transcriptions`,
  `${API}/stt/transcriptions/:`,
  `${API}/stt/transcriptions/:/transcript`,
  `${API}/stt/transcriptions/:/audio`,
  `${API}/stt/calls`,
  `${API}/stt/calls/:`,
  `${API}/stt/calls/:/transcript`,
  `${API}/stt/calls/:/audio`,
  `${API}/stt/realtime/sessions/:`,
  `${API}/stt/calls/:/analytics`,
  `${API}/stt/transcriptions/:/analytics`,
  `${API}/stt/agents/:/analytics`,
]);

export function routePattern(url: string): string {
  return url.replace(/:[^/]+/g, ':');
}

/** The value of cookie `name` in a Cookie header; undefined when absent. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface DeskAuth {
  session: DeskSessionRecord;
  /** The cookie's secret, from which the CSRF token is derived. */
  secret: string;
}

/** The request's desk session, or null (no cookie, not valid, ended or expired). */
export async function deskSessionOf(ctx: AppContext, req: FastifyRequest): Promise<DeskAuth | null> {
  const token = parseDeskToken(cookieValue(headerValue(req.headers.cookie), DESK_COOKIE), 'ds');
  if (!token) return null;
  const outcome = await ctx.store.useDeskSession(token.id, token.secretHash, ctx.now(), SESSION_IDLE_MS, SESSION_TOUCH_AFTER_MS);
  return outcome.ok ? { session: outcome.session, secret: token.secret } : null;
}

/** The origins the desk's pages may post from. With `--public-url` exactly that origin:
 * behind a proxy the request's own Host says nothing trustworthy (a proxy may rewrite it, and
 * a client may forge it). Without it, only the address the browser connected to directly, as
 * the socket (not a header) says, plus `localhost` when that is a loopback address: a
 * loopback or lab install works with no setting, anything behind a proxy needs the setting. */
export function deskOrigins(ctx: AppContext, req: FastifyRequest): string[] {
  if (ctx.config.publicUrl !== undefined) return [ctx.config.publicUrl];
  const local = req.socket.localAddress;
  const port = req.socket.localPort;
  if (!local || !port) return [];
  const address = local.startsWith('::ffff:') ? local.slice(7) : local;
  const host = address.includes(':') ? `[${address}]` : address;
  const origins = [`http://${host}:${port}`];
  if (address === '::1' || address.startsWith('127.')) origins.push(`http://localhost:${port}`);
  return origins;
}

/** True when the request's Origin is one of the desk's origins (deskOrigins). A browser sends
 * Origin on every POST, so a missing one is refused. */
export function sameOrigin(ctx: AppContext, req: FastifyRequest): boolean {
  const origin = headerValue(req.headers.origin);
  if (!origin) return false;
  return deskOrigins(ctx, req).includes(origin);
}

export function requireSameOrigin(ctx: AppContext, req: FastifyRequest): void {
  if (!sameOrigin(ctx, req)) {
    const hint =
      ctx.config.publicUrl === undefined
        ? " (behind a proxy, or reached by a name, the operator sets the desk's address with --public-url)"
        : '';
    throw new ScribedError('DESK_REQUEST_REFUSED', `the request did not come from this server's own desk page (Origin)${hint}`);
  }
}

/** A desk request that changes state: same origin and the session's CSRF token. */
export function requireCsrf(ctx: AppContext, req: FastifyRequest, auth: DeskAuth): void {
  requireSameOrigin(ctx, req);
  if (!csrfMatches(auth.secret, headerValue(req.headers[DESK_CSRF_HEADER]))) {
    throw new ScribedError('DESK_REQUEST_REFUSED', `the ${DESK_CSRF_HEADER} header is missing or wrong`);
  }
}

/** Set-Cookie for a new session; Secure when the desk is on https (`--public-url` says so; the
 * server itself may see plain http behind a TLS proxy). */
export function sessionCookie(ctx: AppContext, value: string): string {
  const secure = ctx.config.publicUrl?.startsWith('https:') ? '; Secure' : '';
  return `${DESK_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_ABSOLUTE_MS / 1000}${secure}`;
}

export function clearSessionCookie(reply: FastifyReply): void {
  void reply.header('set-cookie', `${DESK_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
}

/** Install the desk's reads of native routes (above). Call before any route plugin. */
export function installDeskReads(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('deskSessionId', null);
  app.addHook('onRequest', async (req) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return;
    const url = req.routeOptions.url;
    if (url === undefined || !DESK_READABLE_ROUTES.has(routePattern(url))) return;
    // A credential, when presented, decides alone (a backend's request stays a backend's).
    if (req.headers.accesskey !== undefined || req.headers.authorization !== undefined) return;
    const auth = await deskSessionOf(ctx, req);
    if (!auth) return; // the route's own hook answers UNAUTHORIZED
    req.accountId = auth.session.accountId;
    req.deskSessionId = auth.session.id;
  });
}
