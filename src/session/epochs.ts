// Resume: the client's cursor checked against what the session holds, then a new epoch opened
// in the store (which fences whichever node served the old one) and in the capture cursor.
import { ScribedError } from '../core/errors.js';
import type { SessionContext } from './session-context.js';

/** Why a resume with the client's `clientCaptured` cannot go on, thrown; nothing if it can. */
export function checkResume(ctx: SessionContext, clientCaptured: bigint | undefined): void {
  if (ctx.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
  if (ctx.closing)
    throw new ScribedError('SESSION_CLOSED', 'the session is closing: its close waits for the deferred recognition to catch up');
  if (clientCaptured !== undefined && clientCaptured < ctx.cursor.capturedSamples) {
    throw new ScribedError(
      'CAPTURE_CURSOR_MISMATCH',
      `capturedSamples ${clientCaptured} is below the ${ctx.cursor.capturedSamples} samples the server already holds`,
      { details: { serverCapturedSamples: ctx.cursor.capturedSamples.toString() } },
    );
  }
  if (ctx.moved) throw new ScribedError('SESSION_MOVED');
}

/** The resume's new epoch, in the store and in the cursor (the beginEpoch effect). */
export async function beginEpoch(ctx: SessionContext, clientCaptured: bigint | undefined): Promise<void> {
  // Everything acknowledged is stored before the new epoch starts at it.
  await ctx.spool?.whenDurable();
  const record = await ctx.store.resumeSession(ctx.id, ctx.accountId, {
    clientCaptured,
    heldSamples: ctx.cursor.capturedSamples,
    keepFor: ctx.fence ?? undefined,
    leaseMs: ctx.deps.leaseMs ?? 0,
    now: new Date(),
  });
  if (!record) throw new ScribedError('NOT_FOUND', `session ${ctx.id} does not exist`);
  ctx.enterEpoch(record.epoch);
}
