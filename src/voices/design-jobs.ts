// Voice design jobs, in process, with the store as the queue (a restart resumes them):
//  1. synthesis, at most `maxConcurrentSyntheses` at once (the others wait in a FIFO, and
//     stay PENDING in the store, so a restart queues them again): espeak-ng speaks the preview text with parameters derived from the
//     description (src/core/voice-description.ts); the WAV is stored content-addressed and
//     the design becomes COMPLETED (or FAILED);
//  2. callback delivery when a callbackUrl was given: POST of the design as JSON, signed
//     (src/core/callback-signature.ts), retried with doubling delays until a 2xx or the
//     attempt limit; every attempt's outcome is stored and shown by GET /voices/design/{id}.
import { execFile } from 'node:child_process';
import type { Logger } from 'pino';
import { SIGNATURE_HEADER, callbackSecret, retryDelayMs, signCallback } from '../core/callback-signature.js';
import type { EspeakParams } from '../core/voice-description.js';
import type { RecordingStore } from '../store/recordings.js';
import type { Store, VoiceDesignRecord } from '../store/store.js';

export const CALLBACK_TIMEOUT_MS = 5_000;
const MAX_WAV_BYTES = 10 * 1024 * 1024;

export function synthesize(text: string, p: EspeakParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Text goes through stdin, never argv, so it cannot be read as an option.
    const child = execFile(
      'espeak-ng',
      ['--stdin', '--stdout', '-v', p.voice, '-p', String(p.pitch), '-s', String(p.speed), '-a', String(p.amplitude), '-g', String(p.wordGap)],
      { encoding: 'buffer', maxBuffer: MAX_WAV_BYTES, timeout: 30_000 },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
    child.stdin!.end(text);
  });
}

export interface DesignJobOptions {
  store: Store;
  recordings: RecordingStore;
  log: Logger;
  serverKey: Buffer;
  now: () => Date;
  callbackBaseDelayMs: number;
  callbackMaxAttempts: number;
  /** Body of the callback and of GET /voices/design/{id}: one shape. */
  view: (d: VoiceDesignRecord) => Record<string, unknown>;
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed') => void;
  /** espeak-ng processes at once (src/voices/design-limits.ts). */
  maxConcurrentSyntheses: number;
}

export class DesignJobs {
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Designs waiting for a synthesis slot, oldest first, and those queued or running (so a
   * design is never synthesized twice at once). */
  readonly #waiting: string[] = [];
  readonly #queued = new Set<string>();
  #running = 0;
  #closed = false;

  constructor(private readonly o: DesignJobOptions) {}

  /** Queue a PENDING design for synthesis; it runs when a slot is free. */
  start(designId: string): void {
    if (this.#closed || this.#queued.has(designId)) return;
    this.#queued.add(designId);
    this.#waiting.push(designId);
    this.#pump();
  }

  /** Syntheses running now (for tests and logs). */
  get running(): number {
    return this.#running;
  }

  #pump(): void {
    while (!this.#closed && this.#running < this.o.maxConcurrentSyntheses && this.#waiting.length > 0) {
      const designId = this.#waiting.shift()!;
      this.#running++;
      this.#later(0, async () => {
        try {
          await this.#synthesize(designId);
        } finally {
          this.#running--;
          this.#queued.delete(designId);
          this.#pump();
        }
      }, () => {
        // Cancelled (closing or the store is gone): the slot is free again.
        this.#running--;
        this.#queued.delete(designId);
      });
    }
  }

  async resume(): Promise<void> {
    const now = this.o.now().getTime();
    for (const d of await this.o.store.listUnfinishedVoiceDesigns()) {
      if (d.status === 'PENDING') this.start(d.id);
      else this.#later(Math.max(0, Date.parse(d.callback.nextAt ?? '') - now) || 0, () => this.#deliver(d.id));
    }
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#waiting.length = 0;
  }

  #later(ms: number, fn: () => Promise<void>, cancelled?: () => void): void {
    if (this.#closed) return cancelled?.();
    const t = setTimeout(() => {
      this.#timers.delete(t);
      if (this.#closed || !this.o.store.isOpen()) return cancelled?.();
      fn().catch((err) => this.o.log.error({ err }, 'voice design job failed'));
    }, ms);
    this.#timers.add(t);
  }

  async #synthesize(designId: string): Promise<void> {
    const d = await this.o.store.getVoiceDesign(designId, null);
    if (!d || d.status !== 'PENDING') return;
    let finished: VoiceDesignRecord | null;
    try {
      const wav = await synthesize(d.previewText, d.params as unknown as EspeakParams);
      if (wav.length <= 44) throw new Error('espeak-ng produced no audio');
      const staged = await this.o.recordings.stageBuffer(wav);
      // publish commits the row (COMPLETED) before it renames the file into place; if the
      // rename fails, the undo turns the design FAILED again, so no COMPLETED design ever
      // points at a missing file.
      finished = await this.o.recordings.publish(
        [staged],
        () => this.o.store.finishVoiceDesign(designId, { previewSha256: staged.sha256, previewBytes: staged.sizeBytes }, this.o.now()),
        async () => {
          await this.o.store.failVoiceDesignPreview(designId, staged.sha256, 'storing the preview failed', this.o.now());
        },
      );
    } catch (err) {
      this.o.log.error({ err, designId }, 'voice design synthesis failed');
      // Null when the undo above already failed the design.
      finished = (await this.o.store.finishVoiceDesign(designId, { error: 'synthesis failed' }, this.o.now())) ?? (await this.o.store.getVoiceDesign(designId, null));
    }
    this.o.log.info({ designId, status: finished?.status }, 'voice design finished');
    if (finished?.callback.state === 'PENDING') await this.#deliver(designId);
  }

  async #deliver(designId: string): Promise<void> {
    const d = await this.o.store.getVoiceDesign(designId, null);
    if (!d || !d.callbackUrl || d.callback.state !== 'PENDING') return;
    const attempt = d.callback.attempts + 1;
    const body = JSON.stringify(this.o.view(d));
    const now = this.o.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const res = await fetch(d.callbackUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signCallback(callbackSecret(this.o.serverKey, d.id), Math.floor(now.getTime() / 1000), body),
          'x-scribed-delivery-attempt': String(attempt),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      });
      status = res.status;
      await res.body?.cancel();
      if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (err) {
      error = (err as Error).name === 'TimeoutError' ? `no answer within ${CALLBACK_TIMEOUT_MS} ms` : `connection failed: ${(err as Error).message}`;
    }
    const delivered = error === null;
    const more = !delivered && attempt < this.o.callbackMaxAttempts;
    const delay = more ? retryDelayMs(this.o.callbackBaseDelayMs, attempt + 1) : 0;
    await this.o.store.recordCallbackAttempt(
      designId,
      {
        state: delivered ? 'DELIVERED' : more ? 'PENDING' : 'FAILED',
        attempts: attempt,
        lastStatus: status,
        lastError: error,
        nextAt: more ? new Date(now.getTime() + delay).toISOString() : null,
      },
      this.o.now(),
    );
    this.o.onAttempt?.(delivered ? 'delivered' : more ? 'retry' : 'failed');
    this.o.log.info({ designId, attempt, status, delivered }, 'voice design callback attempt');
    if (more) this.#later(delay, () => this.#deliver(designId));
  }
}
