// The desk's own routes (docs/desk.md): redeeming a login link into a session cookie, the
// session itself (who, its CSRF token, logout), the account's live sessions, and a watch
// ticket for one of them. Each action that is not a read is in the audit trail. The desk reads transcripts, calls, search and recordings through the
// native routes (desk-auth.ts), so none of that is written twice.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from '../../desk/policy.js';
import { csrfTokenFor, generateDeskToken, parseDeskToken } from '../../desk/tokens.js';
import { audit } from '../audit.js';
import type { AppContext } from '../context.js';
import { deskWatchers } from '../ws/desk-watchers.js';
import { watchPath } from '../ws/watch.js';
import { clearSessionCookie, deskSessionOf, requireCsrf, requireSameOrigin, sessionCookie, type DeskAuth } from './desk-auth.js';
import { issueTicket } from './sessions.js';
import { DESK_ROUTES } from '../schemas/desk.js';

export { DESK_API } from '../schemas/desk.js';

/** Live sessions the desk lists at once: a floor's worth of calls. */
const LIVE_LIMIT = 200;

export function deskRoutes(ctx: AppContext): FastifyPluginAsync {
  async function required(req: FastifyRequest): Promise<DeskAuth> {
    const auth = await deskSessionOf(ctx, req);
    if (!auth)
      throw new ScribedError('UNAUTHORIZED', 'no desk session: open a login link from your operator (scribed accounts login-link)');
    req.accountId = auth.session.accountId;
    req.deskSessionId = auth.session.id;
    return auth;
  }

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    // The answers hold a CSRF token and account data: never cached, never stored by a proxy.
    app.addHook('onSend', async (_req, reply) => {
      void reply.header('cache-control', 'no-store');
    });

    app.route({
      ...DESK_ROUTES.login,
      handler: async (req, reply) => {
        // Login CSRF (logging a victim into the attacker's account) is stopped by Origin; the
        // token itself is the credential (its form checked by the schema first).
        const presented = req.body.token;
        requireSameOrigin(ctx, req);
        const link = parseDeskToken(presented, 'dl');
        const refused = new ScribedError(
          'UNAUTHORIZED',
          'this login link is not valid: unknown, already used or expired; ask your operator for a new one',
        );
        if (!link) throw refused;
        const session = generateDeskToken('ds');
        const now = ctx.now();
        const expiresAt = new Date(now.getTime() + SESSION_ABSOLUTE_MS).toISOString();
        const outcome = await ctx.store.redeemDeskLoginLink(
          link.id,
          link.secretHash,
          { id: session.id, secretHash: session.secretHash, createdAt: now.toISOString(), expiresAt },
          now,
        );
        if (!outcome.ok) {
          req.log.info({ linkId: link.id, reason: outcome.reason }, 'desk login refused');
          throw refused;
        }
        req.log.info({ linkId: link.id, deskSessionId: session.id, accountId: outcome.accountId }, 'desk login');
        req.deskSessionId = session.id;
        await audit(ctx, req, outcome.accountId, 'desk.login', session.id);
        void reply.header('set-cookie', sessionCookie(ctx, session.value));
        return ok({ accountId: outcome.accountId, expiresAt });
      },
    });

    app.route({
      ...DESK_ROUTES.session,
      handler: async (req) => {
        const auth = await required(req);
        const s = auth.session;
        const account = await ctx.store.getAccount(s.accountId);
        return ok({
          accountId: s.accountId,
          accountName: account?.name ?? null,
          csrfToken: csrfTokenFor(auth.secret),
          expiresAt: s.expiresAt,
          idleTimeoutSeconds: SESSION_IDLE_MS / 1000,
        });
      },
    });

    app.route({
      ...DESK_ROUTES.logout,
      handler: async (req, reply) => {
        const auth = await required(req);
        requireCsrf(ctx, req, auth);
        await ctx.store.endDeskSession(auth.session.id, ctx.now());
        // This node's watch sockets of the session close now; other nodes' within a poll.
        deskWatchers(ctx).endSession(auth.session.id);
        req.log.info({ deskSessionId: auth.session.id }, 'desk logout');
        await audit(ctx, req, auth.session.accountId, 'desk.logout', auth.session.id);
        clearSessionCookie(reply);
        return ok({ loggedOut: true });
      },
    });

    app.route({
      ...DESK_ROUTES.live,
      handler: async (req) => {
        const auth = await required(req);
        // Only sessions with a socket: a shared store's serving nodes renew their leases (a dead
        // node's run out); one node's sessions lose theirs at a restart (paused at start-up).
        const leaseAfter = ctx.config.sharedStore ? new Date() : undefined; // leases run on the real clock
        return ok({ items: await ctx.store.listDeskLiveSessions(auth.session.accountId, LIVE_LIMIT, leaseAfter) });
      },
    });

    // A ticket for the session's watch socket (docs/protocol.md, "Watching a session"): the
    // page never holds a key, so the cookie stands in for the backend of docs/console.md.
    app.route({
      ...DESK_ROUTES.watchTicket,
      handler: async (req) => {
        const auth = await required(req);
        requireCsrf(ctx, req, auth);
        // Watch scope only: the stream socket refuses it (ws/identify.ts), so the desk stays
        // read-only; and it names the desk session, so it dies with it.
        const t = await issueTicket(ctx, auth.session.accountId, req.params.sessionId, { scope: 'watch', deskSessionId: auth.session.id });
        await audit(ctx, req, auth.session.accountId, 'desk.watch_ticket', t.sessionId);
        return ok({ sessionId: t.sessionId, ticket: t.ticket, expiresInSeconds: t.expiresInSeconds, watchUrl: watchPath(t.sessionId) });
      },
    });
  };
}
