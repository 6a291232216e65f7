// Deepgram's pre-recorded API over the native batch path: POST /v1/listen with the audio as
// the body (any Content-Type but JSON, the SDK's `deepgram/audio+video` included) or
// `{"url": ...}` as JSON, fetched only from a destination the operator's outbound policy
// allows (the voice callbacks' policy and transport: src/core/outbound-policy.ts,
// src/outbound/guarded-transport.ts). The mapping is in options.ts, raw-audio.ts and
// response.ts (pure), `callback` in callback.ts; this adapter authenticates (`Authorization: Token <access key>` or
// `Bearer`), stages the audio, submits it as a native batch job (History row, Characters
// charged as the native batch API does), waits for it (batch-wait.ts) and answers in
// Deepgram's shapes, errors included (errors.ts). The live socket (GET /v1/listen) is not here.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import { Stream, type Readable } from 'node:stream';
import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import { ScribedError } from '../../../core/errors.js';
import { GuardedTransport, outboundFailure, systemResolver } from '../../../outbound/guarded-transport.js';
import type { BatchRouteOptions } from '../../context.js';
import { callbackPolicy, type AppContext } from '../../context.js';
import { accountOf } from '../../auth.js';
import { facadeAccount } from '../credentials.js';
import { stageStream, stagingPath, submitStaged, transcribeStaged, type StagedFile } from '../staged-upload.js';
import { callbackUrl, parkedPayload } from './callback.js';
import { DeepgramError, sendDeepgramError } from './errors.js';
import { mapListenQuery, type ListenRequest, type Query } from './options.js';
import { wavHeader, wavSizes, WAV_HEADER_BYTES } from './raw-audio.js';
import { listenResponse } from './response.js';
import { servedWithout } from '../../openapi/route-schema.js';
import { DEEPGRAM_ROUTES } from '../../schemas/deepgram.js';

/** A URL as the server log names it: origin and path, never the query (signed URLs carry
 * credentials there). */
function urlForLog(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

/** How long fetching a URL's audio may take, headers and body. */
const URL_FETCH_TIMEOUT_MS = 120_000;

export function deepgramRoutes(ctx: AppContext, batch: BatchRouteOptions, maxWaitMs: number): FastifyPluginAsync {
  const policy = callbackPolicy(ctx);
  const transport = new GuardedTransport(policy, ctx.config.callbackResolver ?? systemResolver);

  /** The body as it arrives, or the URL's answer, into `file` (with a WAV header for
   * headerless audio). */
  async function stage(body: unknown, isJson: boolean, request: ListenRequest, file: string, log: FastifyBaseLogger): Promise<StagedFile> {
    const header = request.raw ? wavHeader(request.raw.encoding, request.raw.sampleRate, request.raw.channels) : undefined;
    let source: Readable;
    if (isJson) {
      const url = (body as { url?: unknown } | undefined)?.url;
      if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof url !== 'string' || Object.keys(body).length !== 1) {
        throw new DeepgramError(
          400,
          'Bad Request',
          'a JSON body must be {"url": "<audio URL>"}; send audio itself with an audio Content-Type',
        );
      }
      source = await fetchAudio(url, log);
    } else if (body instanceof Stream) {
      source = body as Readable;
    } else {
      // No body at all (no Content-Type, nothing sent): nothing reached the parser.
      throw new DeepgramError(400, 'Bad Request', 'the request holds no audio');
    }
    const staged = await stageStream(source, file, batch.maxUploadBytes, header).catch((err: unknown) => {
      // A URL's answer that breaks off (or outlasts the fetch bound) is the remote's fault.
      if (isJson && !(err instanceof ScribedError)) {
        log.warn({ err, url: urlForLog((body as { url: string }).url) }, "the url's audio broke off");
        throw new DeepgramError(400, 'REMOTE_CONTENT_ERROR', "could not read the url's audio");
      }
      throw err;
    });
    if (staged.bytes === 0) throw new DeepgramError(400, 'Bad Request', 'the request holds no audio');
    if (header) {
      const fh = await fs.open(file, 'r+');
      try {
        for (const [offset, value] of wavSizes(staged.bytes)) {
          const b = Buffer.alloc(4);
          b.writeUInt32LE(value);
          await fh.write(b, 0, 4, offset);
        }
      } finally {
        await fh.close();
      }
    }
    return { ...staged, bytes: staged.bytes + (header ? WAV_HEADER_BYTES : 0) };
  }

  /** The audio a URL names, from an allowed destination only; redirects are not followed. */
  async function fetchAudio(url: string, log: FastifyBaseLogger): Promise<Readable> {
    try {
      const res = await transport.get(url, {
        headers: { accept: 'audio/*, video/*, */*' },
        signal: AbortSignal.timeout(URL_FETCH_TIMEOUT_MS),
      });
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) {
        res.destroy();
        throw new DeepgramError(
          400,
          'REMOTE_CONTENT_ERROR',
          `fetching the url answered HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
        );
      }
      return res;
    } catch (err) {
      if (err instanceof DeepgramError) throw err;
      // Only what the URL itself says is refused by name; a name that resolves to a closed
      // address fails like one that does not resolve, and neither says how (docs/security.md).
      log.warn({ err, url: urlForLog(url) }, 'could not fetch the url');
      if (outboundFailure(err) === 'refused by policy') {
        throw new DeepgramError(
          400,
          'REMOTE_CONTENT_FORBIDDEN',
          'the url names a destination this server may not fetch from (loopback, private, link-local or metadata addresses, unless the operator allows them: docs/security.md)',
        );
      }
      throw new DeepgramError(400, 'REMOTE_CONTENT_ERROR', 'could not fetch the url');
    }
  }

  // The parked callbacks' sweep runs on every node, started and stopped by service.ts.
  return async (app) => {
    app.setErrorHandler(sendDeepgramError);
    app.addHook('onRequest', async (req, reply) => {
      void reply.header('dg-request-id', randomUUID());
      req.accountId = await facadeAccount(ctx.store, req, ['Token', 'Bearer']);
    });
    // Audio of any Content-Type but JSON reaches the route as the raw stream; it is staged to
    // disk under the upload limit, never held in memory.
    app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));

    // The query and the audio are read here, in Deepgram's words (schemas/deepgram.ts says why).
    const listen = servedWithout(DEEPGRAM_ROUTES.listen, 'querystring', 'body');
    app.post<{ Querystring: Query }>(listen.url, { schema: listen.schema }, async (req, reply) => {
      const accountId = accountOf(req);
      const request = mapListenQuery(req.query);
      const isJson = /^application\/json\b/i.test(req.headers['content-type'] ?? '');
      const callback = request.callback === null ? null : callbackUrl(request.callback, policy);
      const file = await stagingPath(batch);
      try {
        const staged = await stage(req.body, isJson, request, file, req.log);
        if (callback !== null) {
          // Answered at once; the response goes to the callback when the job ends (callback.ts).
          const ids = await submitStaged(ctx, batch, req, accountId, staged, request.nativeFields);
          const requestId = String(reply.getHeader('dg-request-id'));
          const render = {
            requestId,
            sha256: staged.sha256,
            model: `scribed-${ctx.engine.info.name}`,
            utterances: request.utterances,
            readable: request.readable,
          };
          const deliveryId = await ctx.store.parkCallbackDelivery({
            accountId,
            url: callback,
            payload: parkedPayload(ids, render),
            now: ctx.now(),
          });
          req.log.info({ deliveryId, transcriptionIds: ids }, 'Deepgram callback parked until its job ends');
          return await reply
            .header('x-scribed-transcription-id', ids[0]!)
            .type('application/json')
            .send(JSON.stringify({ request_id: requestId }));
        }
        const done = await transcribeStaged(ctx, batch, req, reply, accountId, staged, request.nativeFields, maxWaitMs);
        const requestId = String(reply.getHeader('dg-request-id'));
        const body = listenResponse(
          done.map((d) => ({
            meta: {
              transcriptionId: d.row.id,
              title: d.row.title,
              status: d.row.status,
              sampleRateHz: d.row.sampleRateHz,
              audioSamples: d.row.audioSamples,
            },
            segments: d.segments,
          })),
          {
            requestId,
            sha256: staged.sha256,
            created: new Date(done[0]!.row.createdAt).toISOString(),
            model: `scribed-${ctx.engine.info.name}`,
            utterances: request.utterances,
            readable: request.readable,
          },
        );
        return await reply.header('x-scribed-transcription-id', done[0]!.row.id).type('application/json').send(JSON.stringify(body));
      } finally {
        await fs.rm(file, { force: true });
      }
    });
  };
}
