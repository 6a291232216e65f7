// Music projects: capabilities, create/read, whole-brief replace (spec: 47001 / 47009 /
// 47010), quotes and generate. Creating a project or replacing its brief schedules the
// arrangement job (src/music/arrangement-jobs.ts). docs/api.md, Music projects.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { CAPABILITIES, quoteCharacters, validateBrief, type Brief } from '../../core/music-brief.js';
import type { MusicOutcome, MusicProjectRecord, MusicProjectStatus } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { servedWithout } from '../openapi/route-schema.js';
import { MUSIC_ROUTES } from '../schemas/music.js';

export const QUOTE_TTL_MS = 30 * 60 * 1000;

/** 47010's detail, by the state that refused the operation: says whether waiting helps. */
export function busyDetail(status: MusicProjectStatus): string {
  switch (status) {
    case 'ARRANGEMENT_GENERATING':
      return 'the project is ARRANGEMENT_GENERATING: its arrangement is being generated; retry when projectStatus is ARRANGEMENT_READY';
    case 'GENERATION_QUEUED':
      return 'the project is GENERATION_QUEUED: generation has started, so its brief, quotes and generation can no longer change; create a new project for another version';
    case 'ARRANGEMENT_FAILED':
      return 'the project is ARRANGEMENT_FAILED: its arrangement could not be generated; send the brief again (PUT .../brief) to retry';
    case 'ARRANGEMENT_READY': // not refused in this state; kept for an exhaustive switch
      return 'the project changed meanwhile; read it and try again';
  }
}

function projectView(p: MusicProjectRecord, requestId: string) {
  return {
    projectId: p.id,
    projectStatus: p.status,
    arrangementVersion: p.arrangementVersion,
    activeQuote: p.activeQuote,
    requestId,
    brief: p.brief,
    arrangement: p.arrangement,
    generation: p.generation,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

export function musicRoutes(ctx: AppContext): FastifyPluginAsync {
  const notFound = (id: string) => new ScribedError('MUSIC_PROJECT_NOT_FOUND', `music project ${id} does not exist`);

  function settle(out: MusicOutcome, projectId: string): MusicProjectRecord {
    switch (out.kind) {
      case 'ok':
        return out.project;
      case 'not_found':
        throw notFound(projectId);
      case 'busy':
        throw new ScribedError('MUSIC_PROJECT_BUSY', busyDetail(out.status));
      case 'stale_quote':
        throw new ScribedError(
          'MUSIC_QUOTE_STALE',
          'quoteId is not the active quote of the project (replaced, expired or never issued); request a new quote',
        );
      case 'insufficient':
        throw new ScribedError('INSUFFICIENT_CHARACTERS', `the quote needs more Characters than the ${out.balance} available`);
    }
  }

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    // The arrangement jobs run with the node (service.ts); creating or replacing a brief schedules one.
    const jobs = ctx.workers.arrangements;

    app.route({ ...MUSIC_ROUTES.capabilities, handler: async () => ok(CAPABILITIES) });

    // The brief is checked by validateBrief (schemas/music.ts says why), not by the schema.
    app.route({
      ...servedWithout(MUSIC_ROUTES.create, 'body'),
      handler: async (req) => {
        const accountId = accountOf(req);
        const brief = validateBrief(req.body ?? {});
        const now = ctx.now();
        const project = await ctx.store.createMusicProject({
          id: newId('mup', now),
          accountId,
          brief: brief as unknown as Record<string, unknown>,
          createdAt: now.toISOString(),
        });
        jobs.schedule(project.id, accountId, project.arrangementVersion);
        return ok(projectView(project, newId('req', now)));
      },
    });

    app.route({
      ...MUSIC_ROUTES.get,
      handler: async (req) => {
        const accountId = accountOf(req);
        const project = await ctx.store.getMusicProject(req.params.projectId, accountId);
        if (!project) throw notFound(req.params.projectId);
        return ok(projectView(project, newId('req', ctx.now())));
      },
    });

    app.route({
      ...servedWithout(MUSIC_ROUTES.replaceBrief, 'body'),
      handler: async (req) => {
        const accountId = accountOf(req);
        const { projectId } = req.params;
        // Ownership before validation, so a foreign project reads as missing whatever the body.
        if (!(await ctx.store.getMusicProject(projectId, accountId))) throw notFound(projectId);
        const brief: Brief = validateBrief(req.body ?? {});
        const now = ctx.now();
        const project = settle(
          await ctx.store.replaceMusicBrief(projectId, accountId, brief as unknown as Record<string, unknown>, now),
          projectId,
        );
        jobs.schedule(project.id, accountId, project.arrangementVersion);
        return ok(projectView(project, newId('req', now)));
      },
    });

    app.route({
      ...MUSIC_ROUTES.quote,
      handler: async (req) => {
        const accountId = accountOf(req);
        const now = ctx.now();
        const project = settle(
          await ctx.store.createMusicQuote(
            req.params.projectId,
            accountId,
            (p) => ({
              quoteId: newId('mq', now),
              characters: quoteCharacters(validateBrief(p.brief)).toString(),
              arrangementVersion: p.arrangementVersion,
              expiresAt: new Date(now.getTime() + QUOTE_TTL_MS).toISOString(),
              createdAt: now.toISOString(),
            }),
            now,
          ),
          req.params.projectId,
        );
        return ok({ ...project.activeQuote!, projectId: project.id });
      },
    });

    app.route({
      ...MUSIC_ROUTES.generate,
      handler: async (req) => {
        const accountId = accountOf(req);
        const { quoteId } = req.body;
        const now = ctx.now();
        const project = settle(
          await ctx.store.startMusicGeneration(req.params.projectId, accountId, quoteId, now, (q) => ({
            generationId: newId('mug', now),
            quoteId: q.quoteId,
            characters: q.characters,
            arrangementVersion: q.arrangementVersion,
            queuedAt: now.toISOString(),
          })),
          req.params.projectId,
        );
        return ok(projectView(project, newId('req', now)));
      },
    });
  };
}
