// The audio of a facade request, staged in the batch directory under the native upload's
// limits, then handed to the batch submitter (src/batch/submit.ts) like a native upload, and
// deleted whatever the outcome. Also the bound wait for the jobs it queued.
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { IncomingMessage } from 'node:http';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ScribedError } from '../../core/errors.js';
import { batchSubmitterFor, type BatchSubmitOutcome } from '../../batch/submit.js';
import type { BatchRouteOptions } from '../context.js';
import type { AppContext } from '../context.js';
import { awaitTranscriptions, uploadJobs, type FinishedTranscription } from './batch-wait.js';

export interface StagedFile {
  path: string;
  sha256: string;
  bytes: number;
}

/** A new file name in the batch directory for one request's audio. */
export async function stagingPath(opts: BatchRouteOptions): Promise<string> {
  await fs.mkdir(opts.dir, { recursive: true, mode: 0o700 });
  return path.join(opts.dir, `upload-${randomBytes(8).toString('hex')}`);
}

/** Copy `source` to `file`, hashing it; over `maxBytes` stops the copy with PAYLOAD_TOO_LARGE.
 * `prefix` (a container header for headerless audio) is written first and not counted. */
export async function stageStream(source: Readable, file: string, maxBytes: number, prefix?: Buffer): Promise<StagedFile> {
  const hash = createHash('sha256');
  let bytes = 0;
  const counting = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > maxBytes)
        return done(new ScribedError('PAYLOAD_TOO_LARGE', `the audio is over the upload size limit (${maxBytes} bytes)`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  // A refusal (over the limit) must not destroy a request body: its connection still has the
  // answer to carry, and the rest of the body is read and discarded after it
  // (src/server/lingering-close.ts). pipeline destroys every stream on error, so a request is
  // piped into a stream of its own that pipeline may destroy instead. (A fetched URL's answer,
  // a client-side message without a method, is destroyed as before: nothing more is wanted.)
  const isRequestBody = source instanceof IncomingMessage && typeof source.method === 'string';
  const input = isRequestBody ? source.pipe(new PassThrough()) : source;
  const out = createWriteStream(file, { mode: 0o600 });
  if (prefix) {
    hash.update(prefix);
    out.write(prefix);
  }
  await pipeline(input, counting, out);
  return { path: file, sha256: hash.digest('hex'), bytes };
}

/** Submit a staged file as native batch fields (charged, queued); answers the ids of its
 * transcriptions (every leg of a multichannel upload). The file may be deleted afterwards. */
export async function submitStaged(
  ctx: AppContext,
  opts: BatchRouteOptions,
  req: FastifyRequest,
  accountId: string,
  staged: StagedFile,
  fields: Record<string, string>,
): Promise<string[]> {
  const submitter = batchSubmitterFor(opts, () => ({ ...opts, store: ctx.store, engine: ctx.engine, metrics: ctx.metrics, now: ctx.now }));
  const outcome: BatchSubmitOutcome = await submitter.submit(
    { accountId, file: staged.path, audioSha256: staged.sha256, fields, uploadName: null },
    req.log,
  );
  // No Idempotency-Key is passed, so nothing is replayed.
  if (outcome.kind !== 'created' || outcome.job === null) throw new ScribedError('INTERNAL', 'a facade upload was answered as a replay');
  return uploadJobs(ctx.store, outcome.job);
}

/** Submit a staged file as native batch fields and wait for its transcriptions (every leg of
 * a multichannel upload), bounded by maxWaitMs; the caller deletes the staged file. */
export async function transcribeStaged(
  ctx: AppContext,
  opts: BatchRouteOptions,
  req: FastifyRequest,
  reply: FastifyReply,
  accountId: string,
  staged: StagedFile,
  fields: Record<string, string>,
  maxWaitMs: number,
): Promise<FinishedTranscription[]> {
  const ids = await submitStaged(ctx, opts, req, accountId, staged, fields);
  // A client that hangs up stops the wait: its jobs are cancelled and refunded.
  const gone = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableEnded) gone.abort();
  };
  reply.raw.once('close', onClose);
  try {
    return await awaitTranscriptions(ctx.store, accountId, ids, { maxWaitMs, signal: gone.signal });
  } finally {
    reply.raw.off('close', onClose);
  }
}
