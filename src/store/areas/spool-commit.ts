// A node's group commit of the shared spool (docs/scaling.md, "Group commit"): one
// transaction per window writes the spooled audio and progress of every session the node
// serves, so the transactions a node asks of PostgreSQL do not grow with its calls.
//
// Each session is still fenced inside it. One statement locks the rows of the sessions that
// still name this node, passing over rows another transaction holds (SKIP LOCKED): a session
// whose fence failed is reported fenced and a session whose row is busy (a resume or a lease
// renewal in progress) is left for the next window, and neither holds up the others. The
// lock keeps a resume or a claim from moving the epoch on before this transaction commits,
// as writeSpool's does.
//
// Cheap per audio byte: a session's audio of one window is one chunk row, the rows of every
// session go in a few multi-row INSERTs, and nothing else is written per window (no lease
// update on the session row; the lease loop renews it). So the WAL is the chunks, their index
// entries, one lock record per session and a commit record per window (no speculative-insert
// confirmations: insertChunks looks before it inserts); and a chunk of
// telephony audio is its mu-law bytes, one a sample (spool-samples.ts).
import type { SessionFence, SessionProgress, SpoolBatch, SpoolCommitOutcome, SpoolOp } from '../store.js';
import { chunkFrom, packSamples, type SpoolEncoding } from './spool-samples.js';
import { greatest, INT64_MAX, int64, nowIso, type Db, type SqlValue, type Tx } from '../sql/db.js';

/** The net effect of one session's batch, equal to applying its ops in order. */
export interface SpoolPlan {
  fence: SessionFence;
  /** Stored chunks ending at or before this go (the largest keepFrom/clear of the batch). */
  deleteUpTo: bigint | null;
  /** The channel state of the batch's last keepFrom/clear that carried one. */
  channelState: readonly number[] | null;
  /** The chunks to insert, samples in their stored form (spool-samples.ts). */
  chunks: Array<{ startSample: bigint; endSample: bigint; framesJson: string; encoding: SpoolEncoding; bytes: Buffer }>;
  progress: SessionProgress | null;
}

/**
 * Reduce a batch to deletes first, then inserts. Deletes compose (each removes what lies
 * before its sample, so several remove what the largest does), and an append survives only
 * the deletes queued after it, so: delete up to the largest, and insert what of each append
 * lies past every delete queued after it. Throws RangeError on a malformed batch.
 */
export function planSpoolBatch(batch: SpoolBatch): SpoolPlan {
  const chunks: SpoolPlan['chunks'] = [];
  let later: bigint | null = null; // the largest delete queued after the op being looked at
  let channelState: readonly number[] | null = null;
  for (let i = batch.ops.length - 1; i >= 0; i--) {
    const op: SpoolOp = batch.ops[i]!;
    if (op.type === 'append') {
      const c = op.chunk;
      const samples = c.frames.reduce((n, f) => n + f, 0);
      if (samples * 2 !== c.pcm.length) throw new RangeError('spool chunk: frame sizes and PCM length disagree');
      const endSample = int64(c.startSample, 'startSample') + BigInt(samples);
      if (later !== null && endSample <= later) continue;
      if (later !== null && c.startSample < later) {
        // A delete queued after it falls inside it: only the part after the delete is kept.
        const cut = chunkFrom({ startSample: c.startSample, frames: c.frames, encoding: 'pcm_s16le', bytes: c.pcm }, later);
        chunks.push({ startSample: later, endSample, framesJson: JSON.stringify(cut.frames), ...packSamples(cut.bytes) });
      } else chunks.push({ startSample: c.startSample, endSample, framesJson: JSON.stringify(c.frames), ...packSamples(c.pcm) });
    } else {
      const from = op.type === 'clear' ? INT64_MAX : op.fromSample;
      if (later === null || from > later) later = from;
      if (channelState === null && op.channelState !== null && op.channelState.length > 0) {
        if (!op.channelState.every(Number.isFinite)) throw new RangeError('channel state must be finite numbers');
        channelState = op.channelState;
      }
    }
  }
  chunks.reverse();
  const p = batch.progress;
  if (p) {
    int64(p.capturedSamples, 'capturedSamples');
    if (p.charactersCharged !== undefined) int64(p.charactersCharged, 'charactersCharged');
    const n = p.nextSegmentIndex;
    if (n !== undefined && (!Number.isSafeInteger(n) || n < 0))
      throw new RangeError(`nextSegmentIndex must be a non-negative integer, got ${n}`);
  }
  return { fence: batch.fence, deleteUpTo: later, channelState, chunks, progress: p ?? null };
}

/** Rows per multi-row statement: powers of two up to this, so a handful of statement texts
 * serve every count (the driver caches each text once). */
const MAX_ROWS = 128;

/** `items` in slices of power-of-two lengths, largest first. */
export function slices<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  let at = 0;
  while (at < items.length) {
    let n = MAX_ROWS;
    while (n > items.length - at) n >>= 1;
    out.push(items.slice(at, at + n));
    at += n;
  }
  return out;
}

const marks = (n: number, row: string) => Array.from({ length: n }, () => row).join(', ');

export async function writeSpools(db: Db, batches: readonly SpoolBatch[]): Promise<SpoolCommitOutcome> {
  const invalid: SpoolCommitOutcome['invalid'] = [];
  const plans = new Map<string, SpoolPlan>();
  for (const b of batches) {
    const id = b.fence.sessionId;
    try {
      if (plans.has(id)) throw new RangeError('a second batch for the same session');
      plans.set(id, planSpoolBatch(b));
    } catch (err) {
      invalid.push({ sessionId: id, reason: (err as Error).message });
    }
  }
  if (plans.size === 0) return { written: [], fenced: [], busy: [], invalid };
  // fn runs again if PostgreSQL retries the transaction: everything it answers is its own.
  return db.tx(async (tx) => {
    const { held, fenced, busy } = await lockFences(tx, [...plans.values()]);
    const passed = [...plans.values()].filter((p) => held.has(p.fence.sessionId));
    for (const p of passed) {
      const id = p.fence.sessionId;
      if (p.deleteUpTo !== null) await dropSpoolBefore(tx, id, p.deleteUpTo);
      if (p.channelState !== null)
        await tx.run('UPDATE rt_sessions SET channel_state_json = ? WHERE id = ?', [JSON.stringify(p.channelState), id]);
    }
    await insertChunks(tx, passed);
    await raiseProgresses(tx, passed);
    return { written: passed.map((p) => p.fence.sessionId), fenced, busy, invalid };
  });
}

/** Lock the rows of the sessions whose fence holds; the others are fenced, or busy when
 * another transaction holds a row that still names the fence (PostgreSQL only: SQLite's
 * writer holds the whole database). */
async function lockFences(tx: Tx, plans: readonly SpoolPlan[]): Promise<{ held: Set<string>; fenced: string[]; busy: string[] }> {
  const byNode = new Map<string, SpoolPlan[]>();
  for (const p of plans) byNode.set(p.fence.node, [...(byNode.get(p.fence.node) ?? []), p]);
  const lock = tx.dialect === 'postgres' ? ' FOR NO KEY UPDATE SKIP LOCKED' : '';
  const epochOf = new Map(plans.map((p) => [p.fence.sessionId, BigInt(p.fence.epoch)]));
  const held = new Set<string>();
  const seen = new Set<string>();
  for (const [node, group] of byNode) {
    for (const slice of slices(group)) {
      const rows = await tx.all<{ id: string; epoch: bigint }>(
        `SELECT id, epoch FROM rt_sessions WHERE owner_node = ? AND id IN (${marks(slice.length, '?')})${lock}`,
        [node, ...slice.map((p) => p.fence.sessionId)],
      );
      for (const r of rows) {
        seen.add(r.id);
        if (r.epoch === epochOf.get(r.id)) held.add(r.id);
      }
    }
  }
  const fenced = plans.filter((p) => seen.has(p.fence.sessionId) && !held.has(p.fence.sessionId)).map((p) => p.fence.sessionId);
  const busy: string[] = [];
  const unseen = plans.filter((p) => !seen.has(p.fence.sessionId));
  if (tx.dialect === 'postgres') {
    // Passed over: either it no longer names this node, or another transaction holds it.
    // The latest committed row tells which (a plain read waits for no lock).
    for (const slice of slices(unseen)) {
      const rows = await tx.all<{ id: string; epoch: bigint; owner_node: string | null }>(
        `SELECT id, epoch, owner_node FROM rt_sessions WHERE id IN (${marks(slice.length, '?')})`,
        slice.map((p) => p.fence.sessionId),
      );
      const latest = new Map(rows.map((r) => [r.id, r]));
      for (const p of slice) {
        const r = latest.get(p.fence.sessionId);
        const holds = r !== undefined && r.owner_node === p.fence.node && r.epoch === BigInt(p.fence.epoch);
        (holds ? busy : fenced).push(p.fence.sessionId);
      }
    }
  } else fenced.push(...unseen.map((p) => p.fence.sessionId));
  return { held, fenced, busy };
}

async function insertChunks(tx: Tx, plans: readonly SpoolPlan[]): Promise<void> {
  const rows = plans.flatMap((p) =>
    p.chunks.map((c) => [p.fence.sessionId, c.startSample, c.endSample, c.framesJson, c.bytes, c.encoding] as SqlValue[]),
  );
  for (const slice of slices(rows)) {
    if (tx.dialect === 'postgres') {
      // Not ON CONFLICT: PostgreSQL carries it out as a speculative insertion, which writes a
      // confirmation record per row to the WAL (about 50 bytes on a 400-byte chunk). The
      // session's row lock (lockFences) keeps every other writer of its chunks out until this
      // transaction ends, so looking first is as safe here, and a batch written twice (a commit
      // retried after its outcome was lost) still changes nothing.
      await tx.run(
        `INSERT INTO spool_chunks (session_id, start_sample, end_sample, frames_json, pcm, encoding)
         SELECT v.* FROM (VALUES ${marks(slice.length, '(?, CAST(? AS BIGINT), CAST(? AS BIGINT), ?, CAST(? AS BYTEA), ?)')})
           AS v(session_id, start_sample, end_sample, frames_json, pcm, encoding)
          WHERE NOT EXISTS (SELECT 1 FROM spool_chunks c WHERE c.session_id = v.session_id AND c.start_sample = v.start_sample)`,
        slice.flat(),
      );
    } else {
      await tx.run(
        `INSERT INTO spool_chunks (session_id, start_sample, end_sample, frames_json, pcm, encoding) VALUES ${marks(slice.length, '(?, ?, ?, ?, ?, ?)')}
         ON CONFLICT (session_id, start_sample) DO NOTHING`,
        slice.flat(),
      );
    }
  }
}

/** saveFencedProgress for every plan that carries progress, a slice of sessions a statement;
 * the fence is held (the row is locked), so the id is enough. */
async function raiseProgresses(tx: Tx, plans: readonly SpoolPlan[]): Promise<void> {
  const rows = plans.flatMap((p) =>
    p.progress
      ? [
          [
            p.fence.sessionId,
            p.progress.capturedSamples,
            p.progress.charactersCharged ?? null,
            p.progress.nextSegmentIndex === undefined ? null : BigInt(p.progress.nextSegmentIndex),
          ] as SqlValue[],
        ]
      : [],
  );
  const now = nowIso();
  for (const slice of slices(rows)) {
    await tx.run(
      `WITH v(id, captured, charged, next_index) AS (VALUES ${marks(slice.length, '(?, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))')})
       UPDATE rt_sessions
          SET captured_samples   = ${greatest(tx, 'rt_sessions.captured_samples', 'v.captured')},
              characters_charged = ${greatest(tx, 'rt_sessions.characters_charged', 'COALESCE(v.charged, rt_sessions.characters_charged)')},
              next_segment_index = ${greatest(tx, 'rt_sessions.next_segment_index', 'COALESCE(v.next_index, rt_sessions.next_segment_index)')},
              updated_at         = ?
         FROM v WHERE rt_sessions.id = v.id`,
      [...slice.flat(), now],
    );
  }
}

/**
 * The spool keeps nothing before `from`: chunks ending at or before it go, and a chunk it
 * falls inside is cut to start there. A finished segment's audio so leaves the spool exactly
 * (docs/recordings.md: no unredacted audio of a finished segment stays behind), as the file
 * spool's keepFrom does; a chunk holds up to one commit window, which would otherwise keep
 * the last ~50 ms of the segment until the next final.
 */
export async function dropSpoolBefore(tx: Tx, sessionId: string, from: bigint): Promise<void> {
  await tx.run('DELETE FROM spool_chunks WHERE session_id = ? AND end_sample <= ?', [sessionId, from]);
  const straddling = await tx.all<{ start_sample: bigint; end_sample: bigint; frames_json: string; pcm: Buffer; encoding: string }>(
    'SELECT start_sample, end_sample, frames_json, pcm, encoding FROM spool_chunks WHERE session_id = ? AND start_sample < ?',
    [sessionId, from],
  );
  for (const r of straddling) {
    const cut = chunkFrom(
      { startSample: r.start_sample, frames: JSON.parse(r.frames_json) as number[], encoding: r.encoding, bytes: r.pcm },
      from,
    );
    await tx.run('DELETE FROM spool_chunks WHERE session_id = ? AND start_sample = ?', [sessionId, r.start_sample]);
    await tx.run(
      `INSERT INTO spool_chunks (session_id, start_sample, end_sample, frames_json, pcm, encoding) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (session_id, start_sample) DO NOTHING`,
      [sessionId, from, r.end_sample, JSON.stringify(cut.frames), cut.bytes, r.encoding],
    );
  }
}
