// Live sessions across nodes (areas/ownership.ts): a node's lease on a session, fenced by the
// session's epoch, and the spool of acknowledged audio kept in the store.
import type { SessionState, TranscriptionStatus } from '../../core/session-status.js';
import type { SegmentRecord } from './history.js';
import type { SessionProgress, SessionRecord } from './sessions.js';

/** What a node holds while it serves a session: writes naming it change nothing once the
 * session's epoch or owner moved on. */
export interface SessionFence {
  sessionId: string;
  epoch: number;
  node: string;
}

export interface SessionOwnership {
  session: SessionRecord;
  /** The channel state stored with the last final (null before one). */
  channelState: number[] | null;
}

export type ClaimOutcome =
  ({ kind: 'claimed'; previousOwner: string | null } & SessionOwnership) | { kind: 'busy'; owner: string } | { kind: 'not_found' };

export interface SpoolChunk {
  startSample: bigint;
  /** Sample counts of the frames in this chunk, in order (replay feeds them as they came). */
  frames: number[];
  pcm: Buffer;
}

export type SpoolOp =
  | { type: 'append'; chunk: SpoolChunk }
  | { type: 'keepFrom'; fromSample: bigint; channelState: readonly number[] | null }
  | { type: 'clear'; channelState: readonly number[] | null };

/** One session's part of a node's group commit (writeSpools): its spool operations, in the
 * order they were queued, and the progress to save with them, if any. */
export interface SpoolBatch {
  fence: SessionFence;
  ops: readonly SpoolOp[];
  /** Saved as saveFencedProgress would (cursors only ever raised). */
  progress?: SessionProgress;
}

/** What a group commit did with each session's batch (by session id). */
export interface SpoolCommitOutcome {
  /** Stored: ops and progress, in the one transaction, which committed. */
  written: string[];
  /** The fence did not hold: nothing of the session's was written (SESSION_MOVED). */
  fenced: string[];
  /** Another transaction held the session row (a resume, a claim, a lease renewal in
   * progress): nothing of the session's was written; offer the batch again. */
  busy: string[];
  /** Malformed (frame sizes that disagree with the PCM, a non-finite channel state, a
   * second batch for one session): nothing of the session's was written. */
  invalid: Array<{ sessionId: string; reason: string }>;
}

export interface SessionOwnershipStore {
  /** Take the session for `node` at its current epoch (busy while another node's lease on the
   * same epoch runs); the cursor is raised to the end of the spooled audio. */
  claimSession(sessionId: string, accountId: string | null, node: string, leaseMs: number, now: Date): Promise<ClaimOutcome>;
  /** Extend this node's leases; answers the ids it still owns. */
  renewLeases(node: string, sessionIds: readonly string[], leaseMs: number, now: Date): Promise<string[]>;
  releaseSession(fence: SessionFence): Promise<void>;
  /** A new epoch at everything the server holds; CAPTURE_CURSOR_MISMATCH below it. With
   * `keepFor` (the serving node's fence, still valid) that node keeps the session. */
  resumeSession(
    sessionId: string,
    accountId: string,
    opts: { clientCaptured?: bigint; heldSamples?: bigint; keepFor?: SessionFence; leaseMs: number; now: Date },
  ): Promise<SessionRecord | null>;
  sessionOwner(sessionId: string): Promise<{ node: string | null; ownerEpoch: number | null; epoch: number; state: string } | null>;
  /** Open sessions whose owner's lease ran out with spooled audio still held. */
  listOrphanedSessions(now: Date, limit: number): Promise<Array<{ id: string; accountId: string }>>;
  /** Open sessions unchanged since `idleBefore` that no other node serves now: the idle
   * expiry's candidates, oldest change first. */
  listIdleSessions(idleBefore: Date, node: string, now: Date, limit: number): Promise<Array<{ id: string; accountId: string }>>;
  /** Spool operations in order, in one transaction; SESSION_MOVED when fenced. */
  writeSpool(fence: SessionFence, ops: readonly SpoolOp[], now: Date, leaseMs: number): Promise<void>;
  /** A node's group commit: every batch in one transaction, each session's part written only
   * while its fence holds, the others' regardless of it. A session whose row another
   * transaction holds is passed over (busy) rather than waited for, so one session never
   * holds up the rest. Unlike writeSpool the lease is not extended (the lease loop does). */
  writeSpools(batches: readonly SpoolBatch[]): Promise<SpoolCommitOutcome>;
  readSpool(sessionId: string): Promise<SpoolChunk[]>;
  deleteSpool(sessionId: string): Promise<void>;
  saveFencedProgress(fence: SessionFence, progress: SessionProgress): Promise<boolean>;
  appendFencedSegment(fence: SessionFence, segment: SegmentRecord): Promise<boolean>;
  setFencedSessionState(fence: SessionFence, state: SessionState, status: TranscriptionStatus): Promise<boolean>;
  clearOtherOwners(node: string): Promise<void>;
}
