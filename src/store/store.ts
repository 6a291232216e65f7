// The store interface: everything the service persists. One engine-neutral implementation
// (sql-store.ts) runs on SQLite or PostgreSQL; the interface is async so either can sit behind
// it without touching callers. Each method is one transaction: callers never compose
// multi-statement transactions from outside.
//
// The contract of each area (its records and methods) is a file of its own under contract/,
// next to its SQL under areas/; this module composes them and re-exports every type, so
// callers import from here.
//
// Secrets (access keys, API tokens, tickets) never reach the store in clear: callers pass
// the SHA-256 of the secret part (see src/core/credentials.ts) and compare in constant time.
import type { AccountStore } from './contract/accounts.js';
import type { AnalyticsStore } from './contract/analytics.js';
import type { BatchStore, BatchWorkStore } from './contract/batch.js';
import type { CallStore } from './contract/calls.js';
import type { DeskSessionStore } from './contract/desk-sessions.js';
import type { ErasureStore } from './contract/erasure.js';
import type { HistoryStore } from './contract/history.js';
import type { InterpretationStore } from './contract/interpretation.js';
import type { JobClaimStore } from './contract/job-claims.js';
import type { MusicStore } from './contract/music.js';
import type { SessionOwnershipStore } from './contract/ownership.js';
import type { SearchStore } from './contract/search.js';
import type { RuleStore } from './contract/rules.js';
import type { SessionStore } from './contract/sessions.js';
import type { SessionRecordingStore } from './contract/session-recordings.js';
import type { SharedFileStore } from './contract/shared-files.js';
import type { UserGroupStore } from './contract/user-groups.js';
import type { VoiceDesignStore } from './contract/voice-designs.js';
import type { VoiceStore } from './contract/voices.js';
import type { WebhookStore } from './contract/webhooks.js';

export type * from './contract/accounts.js';
export type * from './contract/analytics.js';
export type * from './contract/batch.js';
export type * from './contract/calls.js';
export type * from './contract/desk-sessions.js';
export type * from './contract/erasure.js';
export type * from './contract/history.js';
export type * from './contract/interpretation.js';
export type * from './contract/job-claims.js';
export type * from './contract/music.js';
export type * from './contract/ownership.js';
export type * from './contract/search.js';
export type * from './contract/rules.js';
export type * from './contract/sessions.js';
export type * from './contract/session-recordings.js';
export type * from './contract/shared-files.js';
export type * from './contract/user-groups.js';
export type * from './contract/voice-designs.js';
export type * from './contract/voices.js';
export type * from './contract/webhooks.js';

export interface Store
  extends
    AccountStore,
    SessionStore,
    HistoryStore,
    BatchStore,
    InterpretationStore,
    MusicStore,
    VoiceStore,
    UserGroupStore,
    VoiceDesignStore,
    SessionOwnershipStore,
    JobClaimStore,
    BatchWorkStore,
    SharedFileStore,
    CallStore,
    ErasureStore,
    WebhookStore,
    SearchStore,
    RuleStore,
    DeskSessionStore,
    SessionRecordingStore,
    AnalyticsStore {
  /** Open the database and apply migrations. */
  open(): Promise<void>;
  close(): Promise<void>;
  isOpen(): boolean;
}
