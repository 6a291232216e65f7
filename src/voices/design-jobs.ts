// Voice design jobs, with the store as the queue:
//  1. synthesis, at most `maxConcurrentSyntheses` at once on this node: espeak-ng speaks the
//     preview text with parameters derived from the description
//     (src/core/voice-description.ts); the WAV is stored content-addressed
//     (src/store/recordings.ts) and the design becomes COMPLETED (or FAILED);
//  2. callback delivery when a callbackUrl was given: POST of the design as JSON, signed
//     (src/core/callback-signature.ts), sent through the guarded transport (only to
//     destinations the operator allows, checked at connect time: src/outbound/guarded-transport.ts),
//     retried with doubling delays until a 2xx or the attempt limit. GET /voices/design/{id}
//     shows only the state (PENDING, DELIVERED, FAILED) and the attempt count: what the target
//     answered (status, network error) goes to the server log, never to the client, so a
//     callback cannot be used to probe what listens where.
//
// Claims (areas/job-claims.ts, docs/scaling.md "Background work"). A node works a design only
// while it holds the design row's claim: taken when it starts the synthesis or takes up a
// pending callback, renewed every third of the lease while the design is on its hands (queued,
// synthesizing, or waiting for a retry), released when there is nothing left to do or the
// node stops. The store refuses a finish or a callback attempt from a node that no longer
// holds the claim, so a design is finished once and its callback state only moves forward.
//  - Embedded store (one node): a design created here is claimed and queued at once (FIFO), and
//    at start the claims of the previous process are voided and every unfinished design is
//    taken up again, as before claims existed.
//  - Shared store (`pollMs`): a design created here is claimed at once if a synthesis slot is
//    free; every node also polls for unclaimed work (PENDING designs while it has a free slot,
//    pending callbacks), so the work of a node that stopped is taken up at once (it released
//    its claims) and that of a node that died once its lease has run out.
//
// Delivery id. A callback carries `X-Scribed-Delivery-Id` (the same for every attempt of the
// design's callback) and `X-Scribed-Delivery-Attempt` (the attempt number as stored). A node
// that dies after sending an attempt and before storing its outcome leaves that attempt to
// the node that takes over, which sends it again with the same id and number: a receiver
// recognises the repeat by the id (docs/api.md, Voice design).
import { execFile } from 'node:child_process';
import type { Logger } from 'pino';
import { SIGNATURE_HEADER, callbackSecret, retryDelayMs, signCallback } from '../core/callback-signature.js';
import type { EspeakParams } from '../core/voice-description.js';
import type { RecordingStore } from '../store/recordings.js';
import { DestinationRefused, type GuardedTransport } from '../outbound/guarded-transport.js';
import type { JobClaim, Store, VoiceDesignRecord } from '../store/store.js';

export const CALLBACK_TIMEOUT_MS = 5_000;
export const DELIVERY_ID_HEADER = 'x-scribed-delivery-id';
export const DELIVERY_ATTEMPT_HEADER = 'x-scribed-delivery-attempt';
const MAX_WAV_BYTES = 10 * 1024 * 1024;

/** Work the poll looks for (conditions over voice_designs' own columns, written here). */
const SYNTHESIS_DUE = "status = 'PENDING'";
const CALLBACK_DUE = "status <> 'PENDING' AND callback_state = 'PENDING'";
/** Pending callbacks one poll takes up at most (the next poll takes more). */
const CALLBACKS_PER_POLL = 10;

export function synthesize(text: string, p: EspeakParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Text goes through stdin, never argv, so it cannot be read as an option.
    const child = execFile(
      'espeak-ng',
      [
        '--stdin',
        '--stdout',
        '-v',
        p.voice,
        '-p',
        String(p.pitch),
        '-s',
        String(p.speed),
        '-a',
        String(p.amplitude),
        '-g',
        String(p.wordGap),
      ],
      { encoding: 'buffer', maxBuffer: MAX_WAV_BYTES, timeout: 30_000 },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
    child.stdin!.end(text);
  });
}

/** A callback URL for the log: origin and path, without query or fragment. */
function callbackDestination(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}

/** The delivery id of a design's callback: the same for all its attempts, on any node. */
export function deliveryId(designId: string): string {
  return designId;
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
  /** Sends the callbacks, to allowed destinations only (src/outbound/guarded-transport.ts). */
  transport: GuardedTransport;
  /** espeak-ng processes at once (src/voices/design-limits.ts). */
  maxConcurrentSyntheses: number;
  /** This node's id: the claims it takes name it. */
  node: string;
  /** Lease of a claim; renewed every third of it. */
  leaseMs: number;
  /** Shared store: look for unclaimed work this often. Null on the embedded store. */
  pollMs: number | null;
}

/** Thrown inside a publish when the store refused the finish: this node does not hold the
 * design any more (or it left PENDING): nothing of it is published. */
class NotHeld extends Error {}

export class DesignJobs {
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #loops: NodeJS.Timeout[] = [];
  /** Designs whose claim this node holds, and those it is claiming now. */
  readonly #held = new Set<string>();
  readonly #claiming = new Set<string>();
  /** Held designs waiting for a synthesis slot, oldest first. */
  readonly #waiting: string[] = [];
  #running = 0;
  #polling = false;
  #closed = false;
  /** Aborts callback requests in flight when the node stops. */
  readonly #stopping = new AbortController();

  constructor(private readonly o: DesignJobOptions) {}

  #claim(key: string): JobClaim {
    return { table: 'voice_designs', key, node: this.o.node };
  }

  /** A design created on this node: claim it and queue its synthesis (on the shared store only
   * when a slot is free; otherwise the first node with one takes it up). */
  start(designId: string): void {
    if (this.#closed) return;
    if (this.o.pollMs !== null && this.#running + this.#waiting.length >= this.o.maxConcurrentSyntheses) return;
    this.#take(designId)
      .then((mine) => {
        if (mine) this.#queue(designId);
      })
      .catch((err: unknown) => this.o.log.warn({ err, designId }, 'could not claim the voice design; it is taken up later'));
  }

  /** Syntheses running now (for tests and logs). */
  get running(): number {
    return this.#running;
  }

  /** Claim one named design for this node; false when another node holds it (or this node
   * does or is claiming it already). */
  async #take(designId: string): Promise<boolean> {
    if (this.#held.has(designId) || this.#claiming.has(designId)) return false;
    this.#claiming.add(designId);
    try {
      const mine = await this.o.store.claimJob(this.#claim(designId), this.o.leaseMs, this.o.now());
      if (mine && !this.#closed) this.#held.add(designId);
      else if (mine) await this.o.store.releaseJob(this.#claim(designId));
      return mine && !this.#closed;
    } finally {
      this.#claiming.delete(designId);
    }
  }

  async #release(designId: string): Promise<void> {
    if (!this.#held.delete(designId)) return;
    await this.o.store
      .releaseJob(this.#claim(designId))
      .catch((err: unknown) => this.o.log.warn({ err, designId }, 'could not release the voice design claim; its lease runs out'));
  }

  /** True while this node holds the design (extends the lease); forgets it otherwise. */
  async #stillHeld(designId: string): Promise<boolean> {
    if (!this.#held.has(designId)) return false;
    const kept = await this.o.store.renewJobs('voice_designs', this.o.node, [designId], this.o.leaseMs, this.o.now());
    if (kept.length === 1) return true;
    this.#held.delete(designId);
    this.o.log.warn({ designId }, 'voice design claim lost to another node; leaving the design to it');
    return false;
  }

  #queue(designId: string): void {
    this.#waiting.push(designId);
    this.#pump();
  }

  #pump(): void {
    while (!this.#closed && this.#running < this.o.maxConcurrentSyntheses && this.#waiting.length > 0) {
      const designId = this.#waiting.shift()!;
      this.#running++;
      this.#later(
        0,
        async () => {
          try {
            await this.#guard(designId, () => this.#synthesize(designId));
          } finally {
            this.#running--;
            this.#pump();
            if (this.o.pollMs !== null) this.#pollSoon(); // a slot is free: take up waiting work
          }
        },
        () => {
          // Cancelled (closing or the store is gone): the slot is free again.
          this.#running--;
        },
      );
    }
  }

  /** At start (onReady): take up what is unfinished, and on the shared store keep looking. */
  async resume(): Promise<void> {
    const pollMs = this.o.pollMs;
    this.#every(Math.max(100, Math.floor(this.o.leaseMs / 3)), () => this.#renew());
    if (pollMs !== null) {
      this.#every(pollMs, () => this.#poll());
      this.#pollSoon();
      return;
    }
    // One node: the data-dir lock proves the process that held claims before is gone.
    await this.o.store.clearOtherVoiceDesignClaims(this.o.node);
    for (const d of await this.o.store.listUnfinishedVoiceDesigns()) {
      if (!(await this.#take(d.id))) continue;
      if (d.status === 'PENDING') this.#queue(d.id);
      else this.#scheduleDelivery(d);
    }
  }

  #every(ms: number, fn: () => Promise<void>): void {
    const t = setInterval(() => {
      if (this.#closed || !this.o.store.isOpen()) return;
      fn().catch((err: unknown) => this.o.log.warn({ err }, 'voice design loop failed'));
    }, ms);
    t.unref();
    this.#loops.push(t);
  }

  async #renew(): Promise<void> {
    const keys = [...this.#held];
    if (keys.length === 0) return;
    const kept = new Set(await this.o.store.renewJobs('voice_designs', this.o.node, keys, this.o.leaseMs, this.o.now()));
    for (const k of keys) {
      if (kept.has(k) || !this.#held.delete(k)) continue;
      this.o.log.warn({ designId: k }, 'voice design claim lost to another node; leaving the design to it');
    }
  }

  #pollSoon(): void {
    this.#poll().catch((err: unknown) => this.o.log.warn({ err }, 'voice design poll failed'));
  }

  /** Shared store: claim unclaimed work, syntheses while a slot is free, then callbacks. */
  async #poll(): Promise<void> {
    if (this.#polling || this.#closed || !this.o.store.isOpen()) return;
    this.#polling = true;
    try {
      while (!this.#closed && this.#running + this.#waiting.length < this.o.maxConcurrentSyntheses) {
        const id = await this.#claimNext(SYNTHESIS_DUE);
        if (id === null) break;
        if (id === '') continue;
        this.o.log.info({ designId: id }, 'voice design taken up from the shared queue');
        this.#queue(id);
      }
      for (let i = 0; i < CALLBACKS_PER_POLL && !this.#closed; i++) {
        const id = await this.#claimNext(CALLBACK_DUE);
        if (id === null) break;
        if (id === '') continue;
        const d = await this.o.store.getVoiceDesign(id, null);
        if (!d) {
          await this.#release(id);
          continue;
        }
        this.o.log.info({ designId: id, attempts: d.callback.attempts }, 'voice design callback taken up from the shared queue');
        this.#scheduleDelivery(d);
      }
    } finally {
      this.#polling = false;
    }
  }

  /** Claim the oldest unclaimed design matching `condition`: its id, null when there is none,
   * or '' when it is one this node was working already (its lease had lapsed with nobody
   * taking it: the claim is renewed and the work already scheduled goes on). */
  async #claimNext(condition: string): Promise<string | null> {
    const id = await this.o.store.claimNextJob('voice_designs', condition, this.o.node, this.o.leaseMs, this.o.now());
    if (id === null) return null;
    if (this.#closed) {
      await this.o.store.releaseJob(this.#claim(id));
      return null;
    }
    if (this.#held.has(id)) return '';
    this.#held.add(id);
    return id;
  }

  /** Stop: no new work, callback requests in flight aborted (their attempt is not stored, so
   * the next holder sends it again under the same delivery id), every claim released so
   * another node takes the designs up at once. A synthesis still running finds its claim
   * gone and stores nothing. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const t of this.#loops.splice(0)) clearInterval(t);
    this.#waiting.length = 0;
    this.#stopping.abort();
    const held = [...this.#held];
    this.#held.clear();
    if (!this.o.store.isOpen()) return;
    await Promise.all(held.map((key) => this.o.store.releaseJob(this.#claim(key)).catch(() => undefined)));
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

  #scheduleDelivery(d: VoiceDesignRecord): void {
    const due = Date.parse(d.callback.nextAt ?? '') - this.o.now().getTime();
    this.#later(Math.max(0, due) || 0, () => this.#guard(d.id, () => this.#deliver(d.id)));
  }

  /** Run a design's work; if it throws (the store failed, say), the claim is let go, so the
   * design is taken up again (by a poll on the shared store, at the next start on one node)
   * instead of staying held with nothing scheduled. */
  async #guard(designId: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.o.log.error({ err, designId }, 'voice design job failed; its claim is let go');
      await this.#release(designId);
    }
  }

  async #synthesize(designId: string): Promise<void> {
    const node = this.o.node;
    const d = await this.o.store.getVoiceDesign(designId, null);
    if (!d || d.status !== 'PENDING' || !this.#held.has(designId)) return this.#release(designId);
    let stage: 'synthesis' | 'storing' = 'synthesis';
    let finished: VoiceDesignRecord | null;
    try {
      const wav = await synthesize(d.previewText, d.params as unknown as EspeakParams);
      if (wav.length <= 44) throw new Error('espeak-ng produced no audio');
      if (this.#closed) return; // stopping: the claim is released, the next holder synthesizes
      stage = 'storing';
      const staged = await this.o.recordings.stageBuffer(wav);
      // publish commits the row (COMPLETED) and stores the file around it; if storing fails
      // after the commit, the undo turns the design FAILED again, so no COMPLETED design ever
      // points at a missing file. The finish names this node: refused if it lost the claim.
      finished = await this.o.recordings.publish(
        [staged],
        async () => {
          const out = await this.o.store.finishVoiceDesign(
            designId,
            { previewSha256: staged.sha256, previewBytes: staged.sizeBytes },
            this.o.now(),
            node,
          );
          if (!out) throw new NotHeld();
          return out;
        },
        async () => {
          await this.o.store.failVoiceDesignPreview(designId, staged.sha256, 'storing the preview failed', this.o.now(), node);
        },
      );
    } catch (err) {
      if (err instanceof NotHeld || this.#closed) {
        this.#held.delete(designId);
        this.o.log.info({ designId }, 'voice design no longer held by this node; its synthesis is dropped');
        return;
      }
      this.o.log.error({ err, designId, stage }, 'voice design synthesis failed');
      const error = stage === 'synthesis' ? 'synthesis failed' : 'storing the preview failed';
      finished = await this.o.store.finishVoiceDesign(designId, { error }, this.o.now(), node);
      // Null when the undo above already failed the design (or the claim is gone: then leave it).
      if (!finished && (await this.#stillHeld(designId))) finished = await this.o.store.getVoiceDesign(designId, null);
      if (!finished) return this.#release(designId);
    }
    this.o.log.info({ designId, status: finished.status }, 'voice design finished');
    if (finished.callback.state === 'PENDING') await this.#deliver(designId);
    else await this.#release(designId);
  }

  async #deliver(designId: string): Promise<void> {
    if (this.#closed) return;
    const d = await this.o.store.getVoiceDesign(designId, null);
    if (!d || !d.callbackUrl || d.callback.state !== 'PENDING') return this.#release(designId);
    // The claim is checked (and extended) right before the request: a node that stalled past
    // its lease sends nothing for a design another node took over.
    if (!(await this.#stillHeld(designId))) return;
    const attempt = d.callback.attempts + 1;
    const body = JSON.stringify(this.o.view(d));
    const now = this.o.now();
    let status: number | null = null;
    let error: string | null = null;
    let address: string | null = null;
    try {
      const res = await this.o.transport.post(d.callbackUrl, {
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signCallback(callbackSecret(this.o.serverKey, d.id), Math.floor(now.getTime() / 1000), body),
          [DELIVERY_ID_HEADER]: deliveryId(d.id),
          [DELIVERY_ATTEMPT_HEADER]: String(attempt),
        },
        body,
        signal: AbortSignal.any([AbortSignal.timeout(CALLBACK_TIMEOUT_MS), this.#stopping.signal]),
      });
      status = res.status;
      address = res.address;
      if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (err) {
      const e = err as Error & { cause?: Error };
      error =
        err instanceof DestinationRefused
          ? err.message
          : e.name === 'TimeoutError' || e.cause?.name === 'TimeoutError'
            ? `no answer within ${CALLBACK_TIMEOUT_MS} ms`
            : `connection failed: ${e.message}`;
    }
    // Stopping: the attempt's outcome is unknown; the next holder sends it again (same id).
    if (this.#closed) return;
    const delivered = error === null;
    const more = !delivered && attempt < this.o.callbackMaxAttempts;
    const delay = more ? retryDelayMs(this.o.callbackBaseDelayMs, attempt + 1) : 0;
    const stored = await this.o.store.recordCallbackAttempt(
      designId,
      {
        state: delivered ? 'DELIVERED' : more ? 'PENDING' : 'FAILED',
        attempts: attempt,
        lastStatus: status,
        lastError: error,
        nextAt: more ? new Date(now.getTime() + delay).toISOString() : null,
      },
      this.o.now(),
      this.o.node,
    );
    if (!stored) {
      this.#held.delete(designId);
      this.o.log.warn({ designId, attempt }, 'voice design callback attempt not stored: another node holds the design now');
      return;
    }
    this.o.onAttempt?.(delivered ? 'delivered' : more ? 'retry' : 'failed');
    // The target's answer is for the operator only (the read shows the state and count). The
    // destination is logged as scheme, host and path: a query string may carry the client's own
    // secrets.
    const destination = callbackDestination(d.callbackUrl);
    if (delivered) this.o.log.info({ designId, attempt, destination, address, status }, 'voice design callback delivered');
    else
      this.o.log.warn({ designId, attempt, destination, address, status, error, willRetry: more }, 'voice design callback attempt failed');
    if (more) this.#later(delay, () => this.#guard(designId, () => this.#deliver(designId)));
    else await this.#release(designId);
  }
}
