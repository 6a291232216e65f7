// Interpretation projects: create, read, retry plan and retry of a failed target.
// The retry follows the spec exactly: Idempotency-Key 16-64 printable ASCII, the body
// confirms the server's current plan (47118 otherwise), 47110 when Characters are short,
// 47117 for a missing / other project / other account target, 47111 for a key reused with a
// different body; the same key and body replays the stored result. docs/api.md, Interpretation.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { requireIdempotencyKey } from '../../core/idempotency.js';
import { RATE_VERSION, RETRY_PLAN_TTL_MS, codePoints, cycleCharacters, retryRefusal, retryRequestHash } from '../../core/interpretation.js';
import type { InterpretationProjectRecord, InterpretationTargetRecord } from '../../store/store.js';
import { accountOf, headerValue, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { servedWithout } from '../openapi/route-schema.js';
import { INTERPRETATION_ROUTES, projectRequest, retryRequest, type RetryResultView } from '../schemas/interpretation.js';

export function targetView(t: InterpretationTargetRecord) {
  return {
    targetId: t.id,
    language: t.language,
    state: t.state,
    generationId: t.generationId,
    reservationCycle: t.reservationCycle,
    reservedCharacters: t.reservedCharacters.toString(),
  };
}

function projectView(p: InterpretationProjectRecord) {
  return {
    projectId: p.id,
    title: p.title,
    sourceLanguage: p.sourceLanguage,
    targets: p.targets.map(targetView),
    createdAt: p.createdAt,
  };
}

/** Body limit of POST /interpretation/projects. The largest legal body carries
 * source.text of 100,000 code points and a 200-code-point title; as JSON a code point takes
 * at most 12 bytes (a supplementary character written as an escaped surrogate pair,
 * `\ud83d\ude00`; a serializer that escapes all non-ASCII, such as Python's json.dumps by
 * default, sends CJK as 6 bytes each). 12 x 100,200 = 1,202,400 bytes, plus keys and at most
 * 11 language codes: under 1.25 MiB. The app-wide 256 KiB limit would refuse 100,000 CJK
 * characters (3 bytes each in UTF-8). */
export const INTERPRETATION_CREATE_BODY_LIMIT_BYTES = 1.25 * 1024 * 1024;

export function interpretationRoutes(ctx: AppContext): FastifyPluginAsync {
  const notFound = (targetId: string) =>
    new ScribedError('INTERPRETATION_TARGET_NOT_FOUND', `target ${targetId} does not exist in this project`);

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    app.route({
      ...INTERPRETATION_ROUTES.create,
      bodyLimit: INTERPRETATION_CREATE_BODY_LIMIT_BYTES,
      // A body left out reads as {}: its refusal names the first field required.
      preValidation: async (req) => {
        if (req.body === undefined) req.body = {} as typeof req.body;
      },
      handler: async (req) => {
        const accountId = accountOf(req);
        const valid = projectRequest(req.body);
        const now = ctx.now();
        const units = BigInt(valid.source ? codePoints(valid.source.text) : 0);
        const created = await ctx.store.createInterpretationProject({
          id: newId('ip', now),
          accountId,
          title: valid.title,
          sourceLanguage: valid.sourceLanguage,
          source: valid.source,
          sourceUnits: units,
          createdAt: now.toISOString(),
          targets: valid.targetLanguages.map((language) => ({
            id: newId('it', now),
            language,
            generationId: newId('ia', now),
            characters: cycleCharacters(units, language),
          })),
        });
        if (!created) throw new ScribedError('INSUFFICIENT_CHARACTERS', 'the balance cannot reserve the first cycle of every target');
        return ok(projectView(created));
      },
    });

    app.route({
      ...INTERPRETATION_ROUTES.get,
      handler: async (req) => {
        const accountId = accountOf(req);
        const project = await ctx.store.getInterpretationProject(req.params.projectId, accountId);
        if (!project) throw new ScribedError('NOT_FOUND', `interpretation project ${req.params.projectId} does not exist`);
        return ok(projectView(project));
      },
    });

    // Reading the plan issues and stores one, so HEAD (which Fastify adds for every GET)
    // must not run this handler; it answers 405.
    app.route({
      ...INTERPRETATION_ROUTES.headRetryPlan,
      handler: async (_req, reply) => {
        void reply.header('allow', 'GET');
        throw new ScribedError('METHOD_NOT_ALLOWED', 'HEAD is not supported: reading a retry plan issues one');
      },
    });

    app.route({
      ...INTERPRETATION_ROUTES.retryPlan,
      exposeHeadRoute: false,
      handler: async (req) => {
        const accountId = accountOf(req);
        const now = ctx.now();
        const out = await ctx.store.issueRetryPlan(
          req.params.projectId,
          req.params.targetId,
          accountId,
          now,
          (t) => ({
            nextReservationCycle: t.reservationCycle + 1,
            characters: cycleCharacters(t.sourceUnits, t.language),
            rateVersion: RATE_VERSION,
            expiresAt: new Date(now.getTime() + RETRY_PLAN_TTL_MS).toISOString(),
          }),
          // An issued plan is handed out again until it expires or the rate table changes, so
          // two readers of the plan confirm the same values.
          (plan) => plan.rateVersion === RATE_VERSION && Date.parse(plan.expiresAt) > now.getTime(),
        );
        if (out.kind === 'not_found') throw notFound(req.params.targetId);
        if (out.kind === 'not_failed')
          throw new ScribedError('INTERPRETATION_NOT_RETRYABLE', `target is ${out.state}, not FAILED_RELEASED`);
        const plan = out.target.plan!;
        return ok({
          targetId: out.target.id,
          generationId: out.target.generationId,
          nextReservationCycle: plan.nextReservationCycle,
          characters: Number(plan.characters),
          rateVersion: plan.rateVersion,
          expiresAt: plan.expiresAt,
        });
      },
    });

    // The Idempotency-Key is read before the body is checked (a missing key is refused
    // whatever the body), so the header's schema is for the document only.
    app.route({
      ...servedWithout(INTERPRETATION_ROUTES.retry, 'headers'),
      preValidation: async (req) => {
        requireIdempotencyKey(headerValue(req.headers['idempotency-key']));
      },
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const key = requireIdempotencyKey(headerValue(req.headers['idempotency-key']));
        const request = retryRequest(req.body);
        const { projectId, targetId } = req.params;
        const now = ctx.now();
        const requestId = newId('req', now);
        const out = await ctx.store.retryInterpretationTarget({
          accountId,
          projectId,
          targetId,
          idempotencyKey: key,
          requestHash: retryRequestHash(projectId, targetId, request),
          request,
          now,
          refusal: (t) => retryRefusal(t, request, now),
          result: (t) => ({
            targetId: t.id,
            language: t.language,
            generationId: t.generationId,
            state: t.state,
            reservationCycle: t.reservationCycle,
            reservedCharacters: t.reservedCharacters.toString(),
            message: `retry queued: reservation cycle ${t.reservationCycle} reserved ${t.reservedCharacters} Characters`,
            requestId,
          }),
        });
        ctx.metrics.interpretationRetries.inc({ outcome: out.kind });
        switch (out.kind) {
          case 'retried':
            req.log.info({ targetId, projectId, requestId }, 'interpretation target retried');
            return ok(out.result as RetryResultView);
          case 'replayed':
            void reply.header('idempotent-replayed', 'true');
            return ok(out.result as RetryResultView);
          case 'key_mismatch':
            throw new ScribedError('INTERPRETATION_IDEMPOTENCY_MISMATCH', 'this Idempotency-Key was used with a different retry request');
          case 'not_found':
            throw notFound(targetId);
          case 'refused':
            throw new ScribedError('INTERPRETATION_NOT_RETRYABLE', out.reason);
          case 'insufficient':
            throw new ScribedError(
              'INTERPRETATION_INSUFFICIENT_CHARACTERS',
              `the retry needs ${request.characters} Characters; ${out.balance} available`,
            );
        }
      },
    });
  };
}
