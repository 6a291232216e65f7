// Which node serves a live session, and the audio it acknowledged but has not finalized.
//
// A session is served by one node at a time. The owner is a lease on the session row: the
// node's id, the epoch it serves and an expiry the owner renews. Every write a node makes for
// a live session (progress, segments, state, spooled audio) names the fence it holds
// (epoch and node) and changes nothing when the row says otherwise, so a node that lost the
// session, because a client resumed elsewhere (the epoch moved on) or because its lease ran
// out and another node adopted the session, can no longer write it, and learns so.
//
// The spool here is the shared one (PostgreSQL mode): acknowledged audio as chunks of whole
// frames, written in one transaction per group commit before the acks go out, and the
// recognizer's channel state after the last final. The node that takes a session over reads
// them back and replays the open segment, as a restarted single node replays its file spool.
import { ScribedError } from '../../core/errors.js';
import type {
  ClaimOutcome,
  SegmentRecord,
  SessionFence,
  SessionProgress,
  SessionRecord,
  SessionState,
  SpoolChunk,
  SpoolOp,
  TranscriptionStatus,
} from '../store.js';
import { segmentInsert, updateTranscriptionStatus } from './history.js';
import { unpackSamples } from './spool-samples.js';
import { dropSpoolBefore } from './spool-commit.js';
import { INT64_MAX, int64, nowIso, type Db, type Tx } from '../sql/db.js';
import { raiseProgress, toSession, type SessionRow } from './sessions.js';

export interface OwnedSessionRow extends SessionRow {
  owner_node: string | null;
  owner_epoch: bigint | null;
  lease_until: string | null;
  channel_state_json: string | null;
}

function leaseEnd(now: Date, leaseMs: number): string {
  return new Date(now.getTime() + leaseMs).toISOString();
}

/** The fence check every fenced write repeats: the row still names this epoch and node. */
const FENCED = 'id = ? AND epoch = ? AND owner_node = ?';
const fenceParams = (f: SessionFence) => [f.sessionId, BigInt(f.epoch), f.node];

export function fencedError(f: SessionFence): ScribedError {
  return new ScribedError('SESSION_MOVED', `session ${f.sessionId} epoch ${f.epoch} is no longer served by node ${f.node}`);
}

/**
 * Take the session for `node` at its current epoch. Refused (busy) while another node holds
 * an unexpired lease on the same epoch: that node has (or had a moment ago) the socket. A
 * lease on an older epoch was fenced by the resume that moved the epoch on, and an expired
 * lease belongs to a node that stopped renewing (it died): both are taken over.
 */
export async function claimSession(
  db: Db,
  sessionId: string,
  accountId: string | null,
  node: string,
  leaseMs: number,
  now: Date,
): Promise<ClaimOutcome> {
  return db.tx(async (tx): Promise<ClaimOutcome> => {
    const row = await tx.lockOne<OwnedSessionRow>('SELECT * FROM rt_sessions WHERE id = ?', [sessionId]);
    if (!row || (accountId !== null && row.account_id !== accountId)) return { kind: 'not_found' };
    const heldElsewhere =
      row.owner_node !== null &&
      row.owner_node !== node &&
      row.owner_epoch === row.epoch &&
      row.lease_until !== null &&
      row.lease_until > now.toISOString();
    if (heldElsewhere) return { kind: 'busy', owner: row.owner_node! };
    // What the last owner acknowledged is in the spool even where its last progress save is
    // older: the cursor starts there, so the client's frames continue from its acks.
    const spooled = await spoolEnd(tx, sessionId);
    const captured = spooled > row.captured_samples ? spooled : row.captured_samples;
    await tx.run('UPDATE rt_sessions SET owner_node = ?, owner_epoch = epoch, lease_until = ?, captured_samples = ? WHERE id = ?', [
      node,
      leaseEnd(now, leaseMs),
      captured,
      sessionId,
    ]);
    return {
      kind: 'claimed',
      previousOwner: row.owner_node,
      session: toSession({ ...row, captured_samples: captured }),
      channelState: parseChannel(row.channel_state_json),
    };
  });
}

/** Extend the leases this node still holds; returns the ids it still owns (a session not in
 * the answer was taken over or closed: the node must drop it). */
export async function renewLeases(db: Db, node: string, sessionIds: readonly string[], leaseMs: number, now: Date): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  const rows = await db.all<{ id: string }>(
    `UPDATE rt_sessions SET lease_until = ?
      WHERE owner_node = ? AND owner_epoch = epoch AND state <> 'CLOSED' AND id IN (${sessionIds.map(() => '?').join(', ')})
      RETURNING id`,
    [leaseEnd(now, leaseMs), node, ...sessionIds],
  );
  return rows.map((r) => r.id);
}

/** Give a session up (orderly shutdown, a closed session): nothing changes if it moved on. */
export async function releaseSession(db: Db, fence: SessionFence): Promise<void> {
  await db.run(`UPDATE rt_sessions SET owner_node = NULL, owner_epoch = NULL, lease_until = NULL WHERE ${FENCED}`, fenceParams(fence));
}

/**
 * Resume from any node: a new epoch beginning at everything the server holds (the saved
 * progress or, if later, the end of the spooled audio: acks sent just before a crash may be
 * newer than the last progress save). `keepFor`, when given, is the fence of the node that
 * serves the session now and keeps serving it (its lease follows the new epoch); otherwise the
 * old owner, if any, is fenced off by the new epoch and the next socket's node claims it.
 */
export async function resumeSession(
  db: Db,
  sessionId: string,
  accountId: string,
  opts: { clientCaptured?: bigint; heldSamples?: bigint; keepFor?: SessionFence; leaseMs: number; now: Date },
): Promise<SessionRecord | null> {
  return db.tx(async (tx) => {
    const row = await tx.lockOne<OwnedSessionRow>('SELECT * FROM rt_sessions WHERE id = ? AND account_id = ?', [sessionId, accountId]);
    if (!row) return null;
    if (row.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
    // Everything the server holds: saved progress, the spool's end, and what the serving
    // node has in memory (`heldSamples`, ahead of its last progress save).
    let captured = row.captured_samples;
    for (const c of [await spoolEnd(tx, sessionId), opts.heldSamples ?? 0n]) if (c > captured) captured = c;
    if (opts.clientCaptured !== undefined && opts.clientCaptured < captured) {
      throw new ScribedError(
        'CAPTURE_CURSOR_MISMATCH',
        `capturedSamples ${opts.clientCaptured} is below the ${captured} samples the server already holds`,
        {
          details: { serverCapturedSamples: captured.toString() },
        },
      );
    }
    const bases = JSON.parse(row.epoch_bases) as string[];
    bases.push(captured.toString());
    const keep = opts.keepFor;
    const stillOwner =
      keep !== undefined && row.owner_node === keep.node && Number(row.owner_epoch) === keep.epoch && Number(row.epoch) === keep.epoch;
    await tx.run(
      `UPDATE rt_sessions
          SET epoch = epoch + 1, epoch_bases = ?, captured_samples = ?, state = 'RECORDING', updated_at = ?,
              owner_node = ?, owner_epoch = ?, lease_until = ?
        WHERE id = ?`,
      [
        JSON.stringify(bases),
        int64(captured, 'capturedSamples'),
        nowIso(),
        stillOwner ? keep.node : null,
        stillOwner ? row.epoch + 1n : null,
        stillOwner ? leaseEnd(opts.now, opts.leaseMs) : null,
        sessionId,
      ],
    );
    await tx.run("UPDATE transcriptions SET status = 'RECORDING', updated_at = ? WHERE id = ?", [nowIso(), row.transcription_id]);
    const after = await tx.one<SessionRow>('SELECT * FROM rt_sessions WHERE id = ?', [sessionId]);
    return toSession(after!);
  });
}

/** The owner's node and epoch, for deciding whether an in-memory session is still this node's. */
export async function sessionOwner(
  db: Tx,
  sessionId: string,
): Promise<{ node: string | null; ownerEpoch: number | null; epoch: number; state: string } | null> {
  const r = await db.one<OwnedSessionRow>('SELECT epoch, owner_node, owner_epoch, state FROM rt_sessions WHERE id = ?', [sessionId]);
  return r
    ? { node: r.owner_node, ownerEpoch: r.owner_epoch === null ? null : Number(r.owner_epoch), epoch: Number(r.epoch), state: r.state }
    : null;
}

/** Sessions not closed whose owner's lease ran out (its node stopped renewing: it died) and
 * that still hold spooled audio: their open segment waits for a node to adopt it. */
export async function listOrphanedSessions(db: Tx, now: Date, limit: number): Promise<Array<{ id: string; accountId: string }>> {
  const rows = await db.all<{ id: string; account_id: string }>(
    `SELECT s.id, s.account_id FROM rt_sessions s
      WHERE s.state <> 'CLOSED' AND s.owner_node IS NOT NULL AND s.lease_until < ?
        AND EXISTS (SELECT 1 FROM spool_chunks c WHERE c.session_id = s.id)
      ORDER BY s.lease_until LIMIT ?`,
    [now.toISOString(), limit],
  );
  return rows.map((r) => ({ id: r.id, accountId: r.account_id }));
}

/** Open sessions unchanged since `idleBefore` that no other node serves now (no owner, an
 * owner fenced off by a newer epoch, a lease run out, or this node's own): the idle expiry's
 * candidates (src/session/session-expiry.ts), oldest change first. The expiry claims each
 * before it acts, so two nodes sweeping at once never both end one. */
export async function listIdleSessions(
  db: Tx,
  idleBefore: Date,
  node: string,
  now: Date,
  limit: number,
): Promise<Array<{ id: string; accountId: string }>> {
  const rows = await db.all<{ id: string; account_id: string }>(
    `SELECT id, account_id FROM rt_sessions
      WHERE state <> 'CLOSED' AND updated_at < ?
        AND (owner_node IS NULL OR owner_node = ? OR owner_epoch IS NULL OR owner_epoch <> epoch OR lease_until IS NULL OR lease_until < ?)
      ORDER BY updated_at, id LIMIT ?`,
    [idleBefore.toISOString(), node, now.toISOString(), BigInt(limit)],
  );
  return rows.map((r) => ({ id: r.id, accountId: r.account_id }));
}

// ------------------------------------------------------------------ the shared spool

/** Apply spool operations in order, in one transaction, if the fence still holds; the
 * session row is locked first, so a resume that moves the epoch on waits for this commit or
 * makes it fail. Throws SESSION_MOVED (changing nothing) when fenced. */
export async function writeSpool(db: Db, fence: SessionFence, ops: readonly SpoolOp[], now: Date, leaseMs: number): Promise<void> {
  await db.tx(async (tx) => {
    const owned = await tx.lockOne<{ id: string }>(`SELECT id FROM rt_sessions WHERE ${FENCED}`, fenceParams(fence));
    if (!owned) throw fencedError(fence);
    for (const op of ops) {
      if (op.type === 'append') {
        const c = op.chunk;
        const samples = c.frames.reduce((n, f) => n + f, 0);
        if (samples * 2 !== c.pcm.length) throw new RangeError('spool chunk: frame sizes and PCM length disagree');
        await tx.run(
          `INSERT INTO spool_chunks (session_id, start_sample, end_sample, frames_json, pcm) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (session_id, start_sample) DO NOTHING`,
          [fence.sessionId, int64(c.startSample, 'startSample'), c.startSample + BigInt(samples), JSON.stringify(c.frames), c.pcm],
        );
      } else {
        const from = op.type === 'clear' ? INT64_MAX : op.fromSample;
        await dropSpoolBefore(tx, fence.sessionId, from);
        if (op.channelState !== null && op.channelState.length > 0) {
          if (!op.channelState.every(Number.isFinite)) throw new RangeError('channel state must be finite numbers');
          await tx.run('UPDATE rt_sessions SET channel_state_json = ? WHERE id = ?', [JSON.stringify(op.channelState), fence.sessionId]);
        }
      }
    }
    // Writing is proof of life: the lease follows.
    await tx.run('UPDATE rt_sessions SET lease_until = ? WHERE id = ?', [leaseEnd(now, leaseMs), fence.sessionId]);
  });
}

export async function readSpool(db: Tx, sessionId: string): Promise<SpoolChunk[]> {
  const rows = await db.all<{ start_sample: bigint; frames_json: string; pcm: Buffer; encoding: string }>(
    'SELECT start_sample, frames_json, pcm, encoding FROM spool_chunks WHERE session_id = ? ORDER BY start_sample',
    [sessionId],
  );
  return rows.map((r) => ({
    startSample: r.start_sample,
    frames: JSON.parse(r.frames_json) as number[],
    pcm: unpackSamples(r.encoding, r.pcm),
  }));
}

/** The end of the spooled audio (0 when none). */
async function spoolEnd(tx: Tx, sessionId: string): Promise<bigint> {
  const r = await tx.one<{ e: bigint | null }>(`SELECT MAX(end_sample) AS e FROM spool_chunks WHERE session_id = ?`, [sessionId]);
  return r?.e ?? 0n;
}

/** Drop a closed session's spool (its transcript is persisted). */
export async function deleteSpool(db: Db, sessionId: string): Promise<void> {
  await db.run('DELETE FROM spool_chunks WHERE session_id = ?', [sessionId]);
}

function parseChannel(json: string | null): number[] | null {
  return json === null ? null : (JSON.parse(json) as number[]);
}

/** A live final, written only while the fence holds (first write wins on the index, as in
 * appendSegment). False when fenced. */
export async function appendFencedSegment(db: Db, fence: SessionFence, segment: SegmentRecord): Promise<boolean> {
  const insert = segmentInsert(segment);
  return db.tx(async (tx) => {
    if (!(await tx.lockOne<{ id: string }>(`SELECT id FROM rt_sessions WHERE ${FENCED}`, fenceParams(fence)))) return false;
    await insert(tx);
    return true;
  });
}

/** setSessionState while the fence holds. False when fenced. */
export async function setFencedSessionState(
  db: Db,
  fence: SessionFence,
  state: SessionState,
  status: TranscriptionStatus,
): Promise<boolean> {
  return db.tx(async (tx) => {
    const row = await tx.lockOne<{ transcription_id: string }>(
      `SELECT transcription_id FROM rt_sessions WHERE ${FENCED}`,
      fenceParams(fence),
    );
    if (!row) return false;
    const now = nowIso();
    await tx.run('UPDATE rt_sessions SET state = ?, updated_at = ? WHERE id = ?', [state, now, fence.sessionId]);
    await updateTranscriptionStatus(tx, row.transcription_id, status, undefined, now);
    return true;
  });
}

/** Forget every owner but `node` (the embedded store at start-up: the data-dir lock proves the
 * process that held them is gone). */
export async function clearOtherOwners(db: Db, node: string): Promise<void> {
  await db.run(
    'UPDATE rt_sessions SET owner_node = NULL, owner_epoch = NULL, lease_until = NULL WHERE owner_node IS NOT NULL AND owner_node <> ?',
    [node],
  );
}

/** saveProgress while the fence holds. False when fenced. */
export async function saveFencedProgress(db: Db, fence: SessionFence, progress: SessionProgress): Promise<boolean> {
  return raiseProgress(db, FENCED, fenceParams(fence), progress);
}
