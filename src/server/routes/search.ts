// Full-text search over the account's final segments (docs/search.md):
// GET .../stt/search?q= with web-search syntax, filters and keyset pages. The parameters are
// declared in src/server/schemas/search.ts; the query and its filters are parsed in
// src/core/search-query.ts; the store runs each engine's own search.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { samplesToMs } from '../../core/capture-cursor.js';
import { ok } from '../../core/envelope.js';
import { segmentId } from '../../core/protocol.js';
import { encodeSearchCursor, highlightParts, parseSearchRequest } from '../../core/search-query.js';
import type { SearchHit } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { SEARCH_ROUTES } from '../schemas/search.js';

export function searchHitView(h: SearchHit) {
  return {
    transcriptionId: h.transcriptionId,
    segmentId: segmentId(h.index),
    callId: h.callId,
    speaker: h.speaker,
    startMs: Number(samplesToMs(h.startSample, h.sampleRateHz)),
    endMs: Number(samplesToMs(h.endSample, h.sampleRateHz)),
    text: h.text,
    highlights: highlightParts(h.marked),
    createdAt: h.createdAt,
  };
}

export function searchRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));

    app.route({
      ...SEARCH_ROUTES.search,
      handler: async (req) => {
        const r = parseSearchRequest(req.query);
        // One hit more than the page tells whether another page exists.
        const hits = await ctx.store.searchSegments(accountOf(req), r.query, r.filters, r.limit + 1, r.after);
        const page = hits.slice(0, r.limit);
        const last = page[page.length - 1];
        return ok({
          items: page.map(searchHitView),
          nextCursor:
            hits.length > r.limit && last
              ? encodeSearchCursor({ createdAt: last.createdAt, transcriptionId: last.transcriptionId, index: last.index })
              : null,
        });
      },
    });
  };
}
