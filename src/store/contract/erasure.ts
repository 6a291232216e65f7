// Erasure, retention and the audit trail of transcripts (areas/erasure.ts; docs/redaction.md).

/** What erasing a History row (or a call's) did. `audioFiles`: the names of batch audio the
 * erased jobs had, whose rows are gone from the store; a node keeping batch audio as files
 * removes those too (BatchAudioStore.remove). */
export type EraseOutcome =
  /** `recordingFiles`: content hashes of erased recordings nothing references any more, for
   * the recording store to remove (RecordingStore.remove). */
  | { kind: 'erased'; transcriptionIds: string[]; audioFiles: string[]; recordingFiles: string[] }
  | { kind: 'not_found' }
  /** A row still recording or processing: a live session or a pending batch job. */
  | { kind: 'in_progress'; transcriptionId: string };

/** An account's retention, in days (null: kept until deleted). */
export interface RetentionPolicy {
  accountId: string;
  transcriptsDays: number | null;
  recordingsDays: number | null;
  updatedAt: string;
}

export type AuditAction =
  | 'transcript.download'
  | 'transcription.delete'
  | 'call.transcript.download'
  | 'call.delete'
  | 'retention.delete'
  | 'recording.download'
  | 'call.recording.download'
  | 'retention.recording.delete'
  // The desk (docs/desk.md): a login (subject: the desk session), a logout, the operator's end
  // of an account's desk sessions (subject: the account), a watch ticket (subject: the session).
  | 'desk.login'
  | 'desk.logout'
  | 'desk.sessions_ended'
  | 'desk.watch_ticket';

/** Who did what to which transcript: ids only, never content. */
export interface AuditEvent {
  id: string;
  accountId: string;
  /** The public id of the credential used (null: the retention sweeper). */
  credentialId: string | null;
  action: AuditAction;
  subjectId: string;
  createdAt: string;
}

export interface ErasureStore {
  /** Delete a History row with its segments, batch job, batch audio rows and (real-time) its
   * session, tickets, idempotency keys and spool, in one transaction. Another account's row
   * is not_found. Idempotent: a row already gone is not_found. */
  eraseTranscription(transcriptionId: string, accountId: string): Promise<EraseOutcome>;
  /** Every leg of a call as eraseTranscription does, then the call itself, in one
   * transaction; nothing is deleted while a leg is in progress. */
  eraseCall(callId: string, accountId: string): Promise<EraseOutcome>;
  setRetention(accountId: string, policy: { transcriptsDays: number | null; recordingsDays: number | null }, now: Date): Promise<void>;
  getRetention(accountId: string): Promise<RetentionPolicy | null>;
  /** Ended History rows older than their account's transcripts retention at `now`, oldest
   * first, at most `limit`. */
  listExpiredTranscriptions(now: Date, limit: number): Promise<Array<{ transcriptionId: string; accountId: string }>>;
  recordAudit(event: AuditEvent): Promise<void>;
  /** An account's audit events, newest first. */
  listAudit(accountId: string, limit: number): Promise<AuditEvent[]>;
}
