// The audit trail of transcripts (docs/redaction.md): which key downloaded or deleted which
// transcript, as a structured log line and a row. Ids only: the key's public id (never its
// secret), the action and the subject; never a word of content.
import type { FastifyRequest } from 'fastify';
import { parseCredential } from '../core/credentials.js';
import { newId } from '../core/ids.js';
import type { AuditAction } from '../store/store.js';
import { presentedCredential } from './auth.js';
import type { AppContext } from './context.js';

/** Record `action` on `subjectId` by the request's access key (authenticated before). */
export async function audit(
  ctx: AppContext,
  req: FastifyRequest,
  accountId: string,
  action: AuditAction,
  subjectId: string,
): Promise<void> {
  // A desk session's read names the session (`ds_...`, docs/desk.md), a key's its public id.
  const credentialId = parseCredential(presentedCredential(req, 'access_key')?.trim(), 'sk')?.id ?? req.deskSessionId ?? null;
  const now = ctx.now();
  req.log.info({ audit: { action, subjectId, accountId, credentialId } }, 'audit');
  await ctx.store.recordAudit({ id: newId('aud', now), accountId, credentialId, action, subjectId, createdAt: now.toISOString() });
}

/** Recordings an erasure left unreferenced: their stored content goes too (rows are gone). */
export async function removeErasedRecordings(ctx: AppContext, recordingFiles: readonly string[]): Promise<void> {
  await ctx.recordings?.removeContent(recordingFiles);
}

/** Batch audio a node keeps as files, named by an erasure: removed too (the rows are gone
 * from the store already). A failure is logged; the runner's sweep removes what no job names. */
export async function removeErasedAudio(ctx: AppContext, req: FastifyRequest, audioFiles: readonly string[]): Promise<void> {
  const audio = ctx.batch?.runner.audio;
  if (!audio) return;
  for (const name of audioFiles) {
    await audio
      .remove(name)
      .catch((err: unknown) =>
        req.log.warn({ err, file: name }, 'could not remove the audio of an erased job; the batch sweep removes it'),
      );
  }
}
