// Calls: History rows grouped as the legs of one call (areas/calls.ts, docs/calls.md).
import type { TranscriptionStatus } from '../../core/session-status.js';
import type { HistoryPosition } from './history.js';

/** One leg of a call: a History row labelled with its speaker (a real-time session's, or a
 * batch job's with sessionId null). */
export interface CallLegRecord {
  speaker: string;
  transcriptionId: string;
  sessionId: string | null;
  kind: 'realtime' | 'batch';
  status: TranscriptionStatus;
  sampleRateHz: number;
  audioSamples: bigint;
  createdAt: string;
  updatedAt: string;
}

export interface CallRecord {
  id: string; // call_...
  accountId: string;
  /** The PBX's own id of the call (Twilio CallSid, AudioSocket UUID, FreeSWITCH uuid). */
  externalId: string | null;
  title: string;
  /** The agent on the call (its create's agentId); null when none was given. */
  agentId: string | null;
  /** In the order they joined ((createdAt, transcriptionId) ascending). */
  legs: CallLegRecord[];
  createdAt: string;
  updatedAt: string;
}

export interface CreateCallInput {
  call: { id: string; accountId: string; externalId: string | null; title: string; createdAt: string; agentId?: string | null };
  /** The create's Idempotency-Key (per account, its own namespace) and its request hash. */
  idempotency: { key: string; requestHash: string };
}

export type CreateCallOutcome = { kind: 'created'; call: CallRecord } | { kind: 'replayed'; call: CallRecord } | { kind: 'conflict' };

export interface CallStore {
  /** Idempotent create: the call stored under (accountId, key) when the key was used with the
   * same request hash, `conflict` with another. */
  createCall(input: CreateCallInput): Promise<CreateCallOutcome>;
  getCall(callId: string, accountId: string): Promise<CallRecord | null>;
  /** An account's calls, newest first ((createdAt, id) descending), only those with
   * `externalId` when given, strictly after `after` when given. */
  listCalls(accountId: string, limit: number, opts?: { externalId?: string; after?: HistoryPosition }): Promise<CallRecord[]>;
}
