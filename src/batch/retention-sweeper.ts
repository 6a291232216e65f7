// The retention sweeper (docs/redaction.md): on every live node, every `everyMs`, erase the
// History rows older than their account's transcripts retention (scribed accounts retention),
// with everything eraseTranscription erases, plus the batch audio files a node keeps on disk;
// and the recordings older than their account's recordings retention (the transcript stays).
// It sits beside the batch runner because it removes batch audio as the runner does.
//
// Several nodes on one store need no claim: each erasure is one transaction that locks the
// row first, so two nodes sweeping the same row end with one erasure and one not_found, and a
// node that stops mid-sweep leaves only whole rows behind. Rows are taken a batch at a time
// (oldest first) so one sweep never holds a long transaction.
import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import type { Store } from '../store/store.js';
import type { BatchAudioStore } from './audio-store.js';

export const DEFAULT_RETENTION_SWEEP_MS = 10 * 60_000;
/** Rows looked up per round of a sweep. */
const ROUND = 100;

export interface RetentionSweeperDeps {
  store: Store;
  log: Logger;
  /** Where this node keeps batch audio (files are removed; store rows went with the row). */
  audio?: BatchAudioStore;
  /** Where recordings are kept (src/recording/keeper.ts): erased rows' recordings are removed,
   * and recordings past the recordings retention are deleted. */
  recordings?: {
    erase(transcriptionId: string, accountId: string): Promise<void>;
    removeContent(shas: readonly string[]): Promise<void>;
  };
  now?: () => Date;
  everyMs?: number;
}

export class RetentionSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private readonly now: () => Date;

  constructor(private readonly deps: RetentionSweeperDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(
      () => void this.sweep().catch((err: unknown) => this.deps.log.warn({ err }, 'retention sweep failed; tried again at the next')),
      this.deps.everyMs ?? DEFAULT_RETENTION_SWEEP_MS,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  /** One sweep (one at a time): erase every expired row. Resolves to the rows this node erased. */
  sweep(): Promise<number> {
    this.running ??= this.sweepAll().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async sweepAll(): Promise<number> {
    const { store, log } = this.deps;
    let erased = 0;
    for (;;) {
      const now = this.now();
      const expired = await store.listExpiredTranscriptions(now, ROUND);
      let progressed = false;
      for (const { transcriptionId, accountId } of expired) {
        const outcome = await store.eraseTranscription(transcriptionId, accountId);
        if (outcome.kind !== 'erased') continue; // another node erased it first
        progressed = true;
        erased++;
        for (const name of outcome.audioFiles) await this.deps.audio?.remove(name).catch(() => undefined);
        await this.deps.recordings?.removeContent(outcome.recordingFiles);
        log.info({ audit: { action: 'retention.delete', subjectId: transcriptionId, accountId, credentialId: null } }, 'audit');
        await store.recordAudit({
          id: newId('aud', now),
          accountId,
          credentialId: null,
          action: 'retention.delete',
          subjectId: transcriptionId,
          createdAt: now.toISOString(),
        });
      }
      if (expired.length < ROUND || !progressed) break;
    }
    if (erased > 0) log.info({ erased }, 'retention sweep erased expired transcripts');
    return erased + (await this.sweepRecordings());
  }

  /** Recordings past their account's recordings retention: deleted, transcripts kept. Each
   * delete is one transaction, so nodes sweeping together delete each once. */
  private async sweepRecordings(): Promise<number> {
    const { store, log, recordings } = this.deps;
    if (!recordings) return 0;
    let deleted = 0;
    for (;;) {
      const now = this.now();
      const expired = await store.listExpiredRecordings(now, ROUND);
      for (const { transcriptionId, accountId } of expired) {
        await recordings.erase(transcriptionId, accountId);
        deleted++;
        log.info({ audit: { action: 'retention.recording.delete', subjectId: transcriptionId, accountId, credentialId: null } }, 'audit');
        await store.recordAudit({
          id: newId('aud', now),
          accountId,
          credentialId: null,
          action: 'retention.recording.delete',
          subjectId: transcriptionId,
          createdAt: now.toISOString(),
        });
      }
      if (expired.length < ROUND) break;
    }
    if (deleted > 0) log.info({ deleted }, 'retention sweep deleted expired recordings');
    return deleted;
  }
}
