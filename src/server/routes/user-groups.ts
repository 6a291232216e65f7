// Dashboard user groups at `/api/user` with `Authorization: Token <apiToken>`: get-or-create
// (GET with a JSON body), update (PUT, creates when missing), delete (DELETE with
// current_token). These answer `success` 1 or 0 rather than the v1 envelope, so this plugin
// has its own error handler: `{success: 0, message: "<IDENTIFIER>: <detail>"}` with the
// table's HTTP status. docs/api.md, Dashboard user groups.
import { randomBytes } from 'node:crypto';
import type { FastifyError, FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { ScribedError } from '../../core/errors.js';
import { failDashboard } from '../../core/envelope.js';
import { jsonNestsDeeperThan, tooDeep } from '../../core/json-depth.js';
import { secretMatches } from '../../core/credentials.js';
import { groupToken, tokenHash } from '../../core/user-groups.js';
import type { ServerKeys } from '../../store/server-key.js';
import type { UserGroupRecord } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { toTableError } from '../error-handler.js';
import { USER_GROUP_BODY, USER_GROUP_ROUTES, userGroupRequest } from '../schemas/user-groups.js';
import { validationFailure } from '../validation-errors.js';

/** Fastify does not parse GET bodies; Get User sends one, so read it here with the app's
 * JSON body limit, counted before buffering more. */
async function readGetBody(req: FastifyRequest, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new ScribedError('PAYLOAD_TOO_LARGE');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req.raw as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new ScribedError('PAYLOAD_TOO_LARGE');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('application/json')) throw new ScribedError('BAD_REQUEST', 'send the body as application/json');
  if (jsonNestsDeeperThan(text)) throw tooDeep();
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ScribedError('BAD_REQUEST', `the body is not valid JSON: ${(err as Error).message}`);
  }
}

export function userGroupRoutes(ctx: AppContext, keys: ServerKeys): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'api_token'));
    const key = await keys.load('user-group-token');
    const newToken = (accountId: string) => () => {
      const nonce = randomBytes(16).toString('base64url');
      return { nonce, hash: tokenHash(groupToken(key, accountId, nonce)) };
    };

    const view = (g: UserGroupRecord) => ({
      team_id: g.teamId,
      token: groupToken(key, g.accountId, g.tokenNonce),
      name: g.name,
      provided_id: g.providedId,
      properties: g.properties,
    });

    app.setErrorHandler((err: FastifyError, req, reply) => {
      const e = validationFailure(err, req.routeOptions.schema) ?? toTableError(err);
      if (e.code === 'INTERNAL') req.log.error({ err }, 'unhandled error');
      const { status, body } = failDashboard(e);
      void reply.code(status).send(body);
    });

    // Get-or-create: a HEAD would run it and create a group, so HEAD is not routed here
    // (Fastify adds one for every GET); it answers 405.
    app.route({
      ...USER_GROUP_ROUTES.head,
      handler: async (_req, reply) => {
        void reply.header('allow', 'GET, PUT, DELETE');
        throw new ScribedError('METHOD_NOT_ALLOWED', 'HEAD /api/user is not supported: GET creates a missing group');
      },
    });

    /** A body left out (or null) reads as {}: its refusal names the missing id. */
    const noBodyAsEmpty = async (req: FastifyRequest) => {
      if (req.body === undefined || req.body === null) req.body = {};
    };

    app.route({
      ...USER_GROUP_ROUTES.get,
      exposeHeadRoute: false,
      // Fastify neither parses nor validates a GET body: read it here and check it against the
      // same schema, refused as a schema failure is (the plugin's error handler).
      preValidation: async (req) => {
        req.body = await readGetBody(req, app.initialConfig.bodyLimit ?? 256 * 1024);
        await noBodyAsEmpty(req);
        const valid = req.compileValidationSchema(USER_GROUP_BODY, 'body');
        if (!valid(req.body)) throw Object.assign(new Error('body: invalid'), { validation: valid.errors, validationContext: 'body' });
      },
      handler: async (req) => {
        const accountId = accountOf(req);
        const { providedId, fields } = userGroupRequest(req.body as Static<typeof USER_GROUP_BODY>);
        const { group, created } = await ctx.store.upsertUserGroup(accountId, providedId, fields, false, newToken(accountId), ctx.now());
        return { success: 1 as const, new_user_group: created, user_group: view(group) };
      },
    });

    app.route({
      ...USER_GROUP_ROUTES.update,
      preValidation: noBodyAsEmpty,
      handler: async (req) => {
        const accountId = accountOf(req);
        const { providedId, fields } = userGroupRequest(req.body);
        const { group, created } = await ctx.store.upsertUserGroup(accountId, providedId, fields, true, newToken(accountId), ctx.now());
        return {
          success: 1 as const,
          user_group: { ...view(group), is_new: created ? (1 as const) : (0 as const), environment: group.environment },
        };
      },
    });

    app.route({
      ...USER_GROUP_ROUTES.delete,
      handler: async (req) => {
        const accountId = accountOf(req);
        const { user_group_id: providedId, current_token: currentToken } = req.body;
        const presented = tokenHash(currentToken);
        const out = await ctx.store.deleteUserGroup(accountId, providedId, (stored) => secretMatches(stored, presented));
        if (out === 'not_found') throw new ScribedError('NOT_FOUND', `user group ${providedId} does not exist`);
        if (out === 'mismatch') throw new ScribedError('USER_GROUP_TOKEN_MISMATCH');
        return { success: 1 as const };
      },
    });
  };
}
