// AssemblyAI's async API over the native batch path (docs/compat.md, "AssemblyAI async"):
// POST /v2/upload stages a file for the account (uploads.ts); POST /v2/transcript submits an
// uploaded file as a native batch job (History row, Characters charged as the native batch API
// does; a stereo file with speaker_labels or multichannel a call of two legs) and answers at
// once, queued; GET polls it; GET /v2/transcript lists; DELETE erases it. `webhook_url` is
// parked in the webhook outbox (webhook.ts). The key is `Authorization: <access key>`, the
// bare key AssemblyAI's SDK sends. Only History rows made through this API are transcripts
// here; another account's reads as one that does not exist (404).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Stream, type Readable } from 'node:stream';
import { parseCredential } from '../../../core/credentials.js';
import { newId } from '../../../core/ids.js';
import type { Store, TranscriptionRecord } from '../../../store/store.js';
import { accountOf, headerValue } from '../../auth.js';
import { removeErasedAudio, removeErasedRecordings } from '../../audit.js';
import { callbackPolicy, type AppContext, type BatchRouteOptions } from '../../context.js';
import { renderRoutingErrorsUnder } from '../../error-handler.js';
import { facadeAccountByBareKey } from '../credentials.js';
import { submitStaged } from '../staged-upload.js';
import { AssemblyAiError, badRequest, sendAssemblyAiError } from './errors.js';
import { mapTranscriptBody, TRANSCRIPT_TITLE } from './params.js';
import { ASSEMBLYAI_ROUTES, type TranscriptView } from './schemas.js';
import { deletedObject, listItem, statusOf, transcriptObject, type Leg } from './transcript.js';
import { UploadStore, uploadIdOf, UPLOAD_PATH } from './uploads.js';
import { parkedWebhook, webhookUrl } from './webhook.js';

/** transcript.ts builds the object the schema describes (the serializer does not reshape it). */
const view = (o: Record<string, unknown>) => o as unknown as TranscriptView;
const notFound = () => new AssemblyAiError(404, 'Transcript not found');
const MAX_LIST_LIMIT = 200;
/** History rows a list reads at most to fill a page (a filter skips rows). */
const MAX_LIST_SCAN = 2000;
const SCAN_PAGE = 100;

/** A row of this API: a mono transcript, or a leg of a stereo one. */
const isOurs = (row: TranscriptionRecord) =>
  row.kind === 'batch' && (row.title === TRANSCRIPT_TITLE || (row.callId !== null && row.title.startsWith(`${TRANSCRIPT_TITLE}: `)));

/** The legs of a transcript (one, or a call's two in id order, the first naming it); null
 * when the id names none of the account's transcripts. */
async function legsOf(store: Store, accountId: string, id: string, withSegments: boolean): Promise<{ id: string; legs: Leg[] } | null> {
  const row = await store.getTranscription(id, accountId);
  if (row === null || !isOurs(row)) return null;
  let rows = [row];
  if (row.callId !== null) {
    const call = await store.getCall(row.callId, accountId);
    const ids = (call?.legs ?? []).map((l) => l.transcriptionId).sort();
    rows = (await Promise.all(ids.map((i) => store.getTranscription(i, accountId)))).filter((r): r is TranscriptionRecord => r !== null);
    if (rows.length === 0) return null;
  }
  const legs = await Promise.all(
    rows.map(async (r) => ({ row: r, job: await store.getBatchJob(r.id), segments: withSegments ? await store.listSegments(r.id) : [] })),
  );
  return { id: rows[0]!.id, legs };
}

export function assemblyAiRoutes(ctx: AppContext, batch: BatchRouteOptions): FastifyPluginAsync {
  // The node's one policy: an allow-list reloaded by SIGHUP reaches these webhooks too.
  const policy = callbackPolicy(ctx);
  const uploads = new UploadStore(`${batch.dir}-assemblyai-uploads`, batch.maxUploadBytes, ctx.now);
  const model = `scribed-${ctx.engine.info.name}`;

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.setErrorHandler(sendAssemblyAiError);
    renderRoutingErrorsUnder('/v2/', sendAssemblyAiError);
    app.addHook('onRequest', async (req) => {
      req.accountId = await facadeAccountByBareKey(ctx.store, req);
    });
    // A file of any Content-Type but JSON reaches the upload route as the raw stream; it is
    // staged to disk under the upload limit, never held in memory.
    app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));

    app.route({
      ...ASSEMBLYAI_ROUTES.upload,
      handler: async (req, reply) => {
        if (!(req.body instanceof Stream)) throw badRequest('send the file itself as the body (Content-Type: application/octet-stream)');
        const id = await uploads.put(accountOf(req), req.body as Readable);
        req.log.info({ upload: id }, 'AssemblyAI upload staged');
        return reply.type('application/json').send({ upload_url: `${req.protocol}://${req.host}${UPLOAD_PATH}${id}` });
      },
    });

    app.route({
      ...ASSEMBLYAI_ROUTES.create,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        if (req.body instanceof Stream) throw badRequest('send the parameters as a JSON object (Content-Type: application/json)');
        const request = mapTranscriptBody(req.body);
        const webhook = request.webhook === null ? null : { ...request.webhook, url: webhookUrl(request.webhook.url, policy) };
        const staged = await uploads.resolve(accountId, request.audioUrl);
        if (staged === null) {
          throw badRequest(
            uploadIdOf(request.audioUrl) === null
              ? 'audio_url: scribed transcribes files uploaded to it (POST /v2/upload, the SDK does it for a local file); it does not fetch other URLs'
              : `audio_url: no such upload for this key (an upload serves the account that made it, for 24 h, on the node that received it)`,
          );
        }
        const ids = await submitStaged(ctx, batch, req, accountId, staged, request.nativeFields);
        const id = [...ids].sort()[0]!;
        if (webhook !== null) {
          const deliveryId = await ctx.store.parkCallbackDelivery({
            accountId,
            url: webhook.url,
            payload: parkedWebhook({ transcriptId: id, transcriptionIds: ids, header: webhook.header }),
            now: ctx.now(),
          });
          req.log.info({ deliveryId, transcriptionIds: ids }, 'AssemblyAI webhook parked until its job ends');
        }
        const found = await legsOf(ctx.store, accountId, id, false);
        if (found === null) throw new AssemblyAiError(500, 'Internal server error');
        const { audio_url, webhook_url, webhook_auth, webhook_auth_header_name } = request.echo;
        const body = transcriptObject(id, found.legs, model, { audio_url, webhook_url, webhook_auth, webhook_auth_header_name });
        return reply.header('x-scribed-transcription-id', id).type('application/json').send(view(body));
      },
    });

    app.route({
      ...ASSEMBLYAI_ROUTES.get,
      handler: async (req, reply) => {
        const found = await legsOf(ctx.store, accountOf(req), req.params.transcript_id, true);
        if (found === null) throw notFound();
        return reply.type('application/json').send(view(transcriptObject(found.id, found.legs, model)));
      },
    });

    app.route({
      ...ASSEMBLYAI_ROUTES.list,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const q = req.query;
        const limit = q.limit === undefined ? 10 : Number(q.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT)
          throw badRequest(`limit: an integer from 1 to ${MAX_LIST_LIMIT}`);
        if (q.throttled_only !== undefined && q.throttled_only !== 'true' && q.throttled_only !== 'false')
          throw badRequest('throttled_only: true or false');
        const positionOf = async (name: 'before_id' | 'after_id') => {
          const at = q[name];
          if (at === undefined) return null;
          const row = await ctx.store.getTranscription(at, accountId);
          if (row === null || !isOurs(row)) throw badRequest(`${name}: no such transcript`);
          // The other leg of a stereo call may sort on either side of the one named.
          if (row.callId !== null) seenCalls.add(row.callId);
          return { createdAt: row.createdAt, id: row.id };
        };
        const items: Array<Record<string, unknown>> = [];
        const seenCalls = new Set<string>();
        const before = await positionOf('before_id');
        const after = await positionOf('after_id');
        let position = before ?? undefined;
        let scanned = 0;
        scan: while (scanned < MAX_LIST_SCAN) {
          const rows = await ctx.store.listTranscriptions(accountId, SCAN_PAGE, position);
          if (rows.length === 0) break;
          for (const row of rows) {
            scanned++;
            position = { createdAt: row.createdAt, id: row.id };
            if (after !== null && row.createdAt <= after.createdAt && (row.createdAt < after.createdAt || row.id <= after.id)) break scan;
            if (!isOurs(row) || (q.created_on !== undefined && !row.createdAt.startsWith(q.created_on))) continue;
            if (row.callId !== null) {
              if (seenCalls.has(row.callId)) continue;
              seenCalls.add(row.callId);
            }
            const found = await legsOf(ctx.store, accountId, row.id, false);
            if (found === null) continue;
            if (q.status !== undefined && statusOf(found.legs).status !== q.status) continue;
            items.push(listItem(found.id, found.legs, `${req.protocol}://${req.host}/v2/transcript/${found.id}`));
            // Newer than after_id: the page is the `limit` just after it, so keep scanning to it.
            if (after === null && items.length >= limit) break scan;
          }
          if (rows.length < SCAN_PAGE) break;
        }
        const page = after === null ? items.slice(0, limit) : items.slice(-limit);
        const query = (extra: Record<string, string>) => {
          const p = new URLSearchParams({ limit: String(limit) });
          if (q.status !== undefined) p.set('status', q.status);
          if (q.created_on !== undefined) p.set('created_on', q.created_on);
          for (const [k, v] of Object.entries(extra)) p.set(k, v);
          return `/v2/transcript?${p.toString()}`;
        };
        const body = {
          page_details: {
            limit,
            result_count: page.length,
            current_url: req.url,
            // AssemblyAI's paging: prev_url reaches older transcripts, next_url newer ones.
            prev_url: page.length > 0 ? query({ before_id: String(page.at(-1)!.id) }) : null,
            next_url: page.length > 0 ? query({ after_id: String(page[0]!.id) }) : null,
          },
          transcripts: page,
        };
        return reply.type('application/json').send(body);
      },
    });

    app.route({
      ...ASSEMBLYAI_ROUTES.delete,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const found = await legsOf(ctx.store, accountId, req.params.transcript_id, false);
        if (found === null) throw notFound();
        const { status } = statusOf(found.legs);
        const inProgress = () => badRequest(`Transcript ${found.id} is still ${status}; delete it once it is completed or errored`);
        if (status === 'queued' || status === 'processing') throw inProgress();
        const callId = found.legs[0]!.row.callId;
        const outcome =
          callId === null ? await ctx.store.eraseTranscription(found.id, accountId) : await ctx.store.eraseCall(callId, accountId);
        if (outcome.kind === 'in_progress') throw inProgress();
        if (outcome.kind !== 'erased') throw notFound();
        await removeErasedAudio(ctx, req, outcome.audioFiles);
        await removeErasedRecordings(ctx, outcome.recordingFiles);
        await recordDelete(ctx, req, accountId, callId === null ? 'transcription.delete' : 'call.delete', callId ?? found.id);
        return reply.type('application/json').send(view(deletedObject(found.id, found.legs, model)));
      },
    });
  };
}

/** The audit row of an erasure, naming the key by its public id (never its secret). */
async function recordDelete(
  ctx: AppContext,
  req: FastifyRequest,
  accountId: string,
  action: 'transcription.delete' | 'call.delete',
  subjectId: string,
) {
  const credentialId = parseCredential(headerValue(req.headers.authorization)?.trim(), 'sk')?.id ?? null;
  const now = ctx.now();
  req.log.info({ audit: { action, subjectId, accountId, credentialId } }, 'audit');
  await ctx.store.recordAudit({ id: newId('aud', now), accountId, credentialId, action, subjectId, createdAt: now.toISOString() });
}
