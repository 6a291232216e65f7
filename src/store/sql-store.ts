// The Store (store.ts) over a SQL database: SQLite in the data directory (the embedded
// default) or PostgreSQL shared by many nodes. Each method is one call into an area module
// (areas/*), written once for both engines against sql/db.ts.
import type { Db } from './sql/db.js';
import { SqliteDb } from './sql/sqlite-db.js';
import { PostgresDb, type PostgresOptions } from './sql/postgres-db.js';
import { MIGRATIONS } from './migrations.js';
import { POSTGRES_MIGRATIONS } from './migrations-postgres.js';
import * as accounts from './areas/accounts.js';
import * as debits from './areas/debits.js';
import * as sessions from './areas/sessions.js';
import * as history from './areas/history.js';
import * as batch from './areas/batch.js';
import * as interp from './areas/interpretation.js';
import * as music from './areas/music.js';
import * as voices from './areas/voices.js';
import * as userGroups from './areas/user-groups.js';
import * as designs from './areas/voice-designs.js';
import * as ownership from './areas/ownership.js';
import * as spoolCommit from './areas/spool-commit.js';
import * as jobs from './areas/job-claims.js';
import * as sharedFiles from './areas/shared-files.js';
import * as batchAudio from './areas/batch-audio.js';
import * as calls from './areas/calls.js';
import * as erasure from './areas/erasure.js';
import * as webhooks from './areas/webhooks.js';
import * as search from './areas/search.js';
import * as rules from './areas/rules.js';
import * as desk from './areas/desk-sessions.js';
import * as sessionRecordings from './areas/session-recordings.js';
import * as analytics from './areas/analytics.js';
import type { Store } from './store.js';

export type StoreLocation = { kind: 'sqlite'; path: string; busyTimeoutMs?: number } | ({ kind: 'postgres' } & PostgresOptions);

export class SqlStore implements Store {
  private connection: Db | null = null;

  constructor(readonly location: StoreLocation) {}

  get engine(): 'sqlite' | 'postgres' {
    return this.location.kind;
  }

  /** The database, for the parts of the service that share it beyond the Store contract
   * (session ownership, the spool, the job queue). */
  get db(): Db {
    if (!this.connection) throw new Error('store is not open');
    return this.connection;
  }

  /** An area function bound to this store; a call on a closed store rejects. */
  private call<A extends unknown[], R>(fn: (db: Db, ...args: A) => Promise<R>): (...args: A) => Promise<R> {
    return (...args) => (this.connection ? fn(this.connection, ...args) : Promise.reject(new Error('store is not open')));
  }

  async open(): Promise<void> {
    if (this.connection) return;
    const l = this.location;
    this.connection =
      l.kind === 'sqlite'
        ? SqliteDb.open(l.path, MIGRATIONS, { busyTimeoutMs: l.busyTimeoutMs })
        : await PostgresDb.open(l, POSTGRES_MIGRATIONS);
  }

  async close(): Promise<void> {
    const db = this.connection;
    this.connection = null;
    await db?.close();
  }

  isOpen(): boolean {
    return this.connection !== null;
  }

  // accounts and credentials
  createAccount = this.call(accounts.createAccount);
  getAccount = this.call(accounts.getAccount);
  findCredential = this.call(accounts.findCredential);
  listAccounts = this.call(accounts.listAccounts);
  rotateAccessKey = this.call(accounts.rotateAccessKey);
  revokeAccessKeys = this.call(accounts.revokeAccessKeys);
  creditCharacters = this.call(accounts.creditCharacters);
  debitCharacters = this.call(accounts.debitCharacters);
  setRedactionDefault = this.call(accounts.setRedactionDefault);
  getRedactionDefault = this.call(accounts.getRedactionDefault);
  debitMany = this.call(debits.debitMany);

  // real-time sessions and tickets
  createSession = this.call(sessions.createSession);
  getSession = this.call(sessions.getSession);
  listSessionsByState = this.call(sessions.listSessionsByState);
  setSessionState = this.call(sessions.setSessionState);
  beginEpoch = this.call(sessions.beginEpoch);
  saveProgress = this.call(sessions.saveProgress);
  insertTicket = this.call(sessions.insertTicket);
  consumeTicket = this.call(sessions.consumeTicket);

  // live sessions across nodes
  claimSession = this.call(ownership.claimSession);
  renewLeases = this.call(ownership.renewLeases);
  releaseSession = this.call(ownership.releaseSession);
  resumeSession = this.call(ownership.resumeSession);
  sessionOwner = this.call(ownership.sessionOwner);
  listOrphanedSessions = this.call(ownership.listOrphanedSessions);
  listIdleSessions = this.call(ownership.listIdleSessions);
  writeSpool = this.call(ownership.writeSpool);
  writeSpools = this.call(spoolCommit.writeSpools);
  readSpool = this.call(ownership.readSpool);
  deleteSpool = this.call(ownership.deleteSpool);
  saveFencedProgress = this.call(ownership.saveFencedProgress);
  appendFencedSegment = this.call(ownership.appendFencedSegment);
  setFencedSessionState = this.call(ownership.setFencedSessionState);
  clearOtherOwners = this.call(ownership.clearOtherOwners);

  // background work on any node
  claimNextJob = this.call(jobs.claimNextJob);
  claimJob = this.call(jobs.claimJob);
  renewJobs = this.call(jobs.renewJobs);
  releaseJob = this.call(jobs.releaseJob);

  // History and transcripts
  getTranscription = this.call(history.getTranscription);
  setTranscriptionStatus = this.call(history.setTranscriptionStatus);
  appendSegment = this.call(history.appendSegment);
  listSegments = this.call(history.listSegments);
  listTranscriptions = this.call(history.listTranscriptions);

  // calls (their legs join through createSession)
  createCall = this.call(calls.createCall);
  getCall = this.call(calls.getCall);
  listCalls = this.call(calls.listCalls);

  // erasure, retention and the audit trail
  eraseTranscription = this.call(erasure.eraseTranscription);
  eraseCall = this.call(erasure.eraseCall);
  setRetention = this.call(erasure.setRetention);
  getRetention = this.call(erasure.getRetention);
  listExpiredTranscriptions = this.call(erasure.listExpiredTranscriptions);
  recordAudit = this.call(erasure.recordAudit);
  listAudit = this.call(erasure.listAudit);

  // full-text search over final segments
  searchSegments = this.call(search.searchSegments);

  // batch jobs
  createBatchJob = this.call(batch.createBatchJob);
  createBatchCall = this.call(batch.createBatchCall);
  findBatchJobByIdempotencyKey = this.call(batch.findBatchJobByIdempotencyKey);
  getBatchJob = this.call(batch.getBatchJob);
  listBatchJobs = this.call(batch.listBatchJobs);
  setBatchJobState = this.call(batch.setBatchJobState);
  failBatchJob = this.call(batch.failBatchJob);
  appendBatchSegment = this.call(batch.appendBatchSegment);

  // batch jobs on any node: fenced by the claim, audio in the store
  setClaimedBatchJobState = this.call(batch.setClaimedBatchJobState);
  failClaimedBatchJob = this.call(batch.failClaimedBatchJob);
  appendClaimedBatchSegment = this.call(batch.appendClaimedBatchSegment);
  clearOtherBatchClaims = this.call(batch.clearOtherBatchClaims);
  putBatchAudioChunk = this.call(batchAudio.putBatchAudioChunk);
  readBatchAudioChunks = this.call(batchAudio.readBatchAudioChunks);
  batchAudioSize = this.call(batchAudio.batchAudioSize);
  deleteBatchAudio = this.call(batchAudio.deleteBatchAudio);
  listBatchAudio = this.call(batchAudio.listBatchAudio);

  // interpretation
  createInterpretationProject = this.call(interp.createInterpretationProject);
  getInterpretationProject = this.call(interp.getInterpretationProject);
  issueRetryPlan = this.call(interp.issueRetryPlan);
  retryInterpretationTarget = this.call(interp.retryInterpretationTarget);
  transitionInterpretationTarget = this.call(interp.transitionInterpretationTarget);

  // music
  createMusicProject = this.call(music.createMusicProject);
  getMusicProject = this.call(music.getMusicProject);
  replaceMusicBrief = this.call(music.replaceMusicBrief);
  createMusicQuote = this.call(music.createMusicQuote);
  startMusicGeneration = this.call(music.startMusicGeneration);
  completeArrangement = this.call(music.completeArrangement);
  failArrangement = this.call(music.failArrangement);
  listMusicProjectsByStatus = this.call(music.listMusicProjectsByStatus);

  // voice library
  createVoice = this.call(voices.createVoice);
  getVoice = this.call(voices.getVoice);
  listVoices = this.call(voices.listVoices);
  addVoiceRecordings = this.call(voices.addVoiceRecordings);
  dropVoiceRecordingsFrom = this.call(voices.dropVoiceRecordingsFrom);
  deleteVoice = this.call(voices.deleteVoice);

  // dashboard user groups
  upsertUserGroup = this.call(userGroups.upsertUserGroup);
  deleteUserGroup = this.call(userGroups.deleteUserGroup);

  // voice design
  createVoiceDesign = this.call(designs.createVoiceDesign);
  createVoiceDesignIfRoom = this.call(designs.createVoiceDesignIfRoom);
  getVoiceDesign = this.call(designs.getVoiceDesign);
  finishVoiceDesign = this.call(designs.finishVoiceDesign);
  recordCallbackAttempt = this.call(designs.recordCallbackAttempt);
  failVoiceDesignPreview = this.call(designs.failVoiceDesignPreview);
  listUnfinishedVoiceDesigns = this.call(designs.listUnfinishedVoiceDesigns);

  // files every node reads: blobs and server keys
  putBlob = this.call(sharedFiles.putBlob);
  getBlob = this.call(sharedFiles.getBlob);
  deleteUnreferencedBlobs = this.call(sharedFiles.deleteUnreferencedBlobs);
  loadServerKey = this.call(sharedFiles.loadServerKey);
  clearOtherVoiceDesignClaims = this.call(designs.clearOtherVoiceDesignClaims);

  // webhooks: endpoints, the delivery outbox (written by history's status changes) and its log
  createWebhookEndpoint = this.call(webhooks.createWebhookEndpoint);
  listWebhookEndpoints = this.call(webhooks.listWebhookEndpoints);
  getWebhookEndpoint = this.call(webhooks.getWebhookEndpoint);
  updateWebhookEndpoint = this.call(webhooks.updateWebhookEndpoint);
  rotateWebhookSecret = this.call(webhooks.rotateWebhookSecret);
  deleteWebhookEndpoint = this.call(webhooks.deleteWebhookEndpoint);
  listWebhookDeliveries = this.call(webhooks.listWebhookDeliveries);
  retryWebhookDelivery = this.call(webhooks.retryWebhookDelivery);
  claimWebhookDelivery = this.call(webhooks.claimWebhookDelivery);
  finishWebhookAttempt = this.call(webhooks.finishWebhookAttempt);
  clearOtherWebhookClaims = this.call(webhooks.clearOtherWebhookClaims);
  pruneWebhookDeliveries = this.call(webhooks.pruneWebhookDeliveries);
  webhookOutboxStats = this.call(webhooks.webhookOutboxStats);
  parkCallbackDelivery = this.call(webhooks.parkCallbackDelivery);
  listParkedCallbacks = this.call(webhooks.listParkedCallbacks);
  releaseCallbackDelivery = this.call(webhooks.releaseCallbackDelivery);

  // live rules, and their alerts through the webhook outbox
  createRule = this.call(rules.createRule);
  listRules = this.call(rules.listRules);
  getRule = this.call(rules.getRule);
  updateRule = this.call(rules.updateRule);
  deleteRule = this.call(rules.deleteRule);
  raiseRuleAlert = this.call(rules.raiseRuleAlert);
  listKeptAlerts = this.call(rules.listKeptAlerts);
  // the desk: login links and browser sessions (docs/desk.md)
  insertDeskLoginLink = this.call(desk.insertDeskLoginLink);
  redeemDeskLoginLink = this.call(desk.redeemDeskLoginLink);
  useDeskSession = this.call(desk.useDeskSession);
  endDeskSession = this.call(desk.endDeskSession);
  endAccountDeskSessions = this.call(desk.endAccountDeskSessions);
  closedDeskSessions = this.call(desk.closedDeskSessions);
  listDeskLiveSessions = this.call(desk.listDeskLiveSessions);
  // redacted recordings: pieces while a session runs, then the finished file's row
  putRecordingPiece = this.call(sessionRecordings.putRecordingPiece);
  hasRecordingPieces = this.call(sessionRecordings.hasRecordingPieces);
  listRecordingPieces = this.call(sessionRecordings.listRecordingPieces);
  saveSessionRecording = this.call(sessionRecordings.saveSessionRecording);
  getSessionRecording = this.call(sessionRecordings.getSessionRecording);
  listExpiredRecordings = this.call(sessionRecordings.listExpiredRecordings);
  eraseSessionRecording = this.call(sessionRecordings.eraseSessionRecording);
  // conversation analytics: categories, leg loudness, each finished call's figures (docs/analytics.md)
  createCategory = this.call(analytics.createCategory);
  listCategories = this.call(analytics.listCategories);
  getCategory = this.call(analytics.getCategory);
  updateCategory = this.call(analytics.updateCategory);
  deleteCategory = this.call(analytics.deleteCategory);
  saveLegLevels = this.call(analytics.saveLegLevels);
  saveLegSpots = this.call(analytics.saveLegSpots);
  getAnalytics = this.call(analytics.getAnalytics);
  listAnalytics = this.call(analytics.listAnalytics);
}
