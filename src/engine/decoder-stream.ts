// The RecognitionStream a pooled decoder serves while it is checked out (src/engine/pool.ts):
// its calls queued on the decoder in order, batched decoding (src/engine/batching.ts), the
// heartbeat that catches a hung worker, and the hand-back on release().
import type { Worker } from 'node:worker_threads';
import { ScribedError } from '../core/errors.js';
import { batchingFor, type DecodeBacklog } from './batching.js';
import type { Slot } from './decoder-thread.js';
import type { AcceptResult, FinalResult, RecognitionStream, StreamRequest } from './types.js';
import type { DecoderRequest, OpenReply } from './worker.js';

/** Test hook: the worker thread behind a stream (e.g. to terminate it on purpose). */
export const kWorker: unique symbol = Symbol('scribed.engine.worker');
/** Test hook: make the worker behind a stream stop answering for `ms` (a hung native call). */
export const kStall: unique symbol = Symbol('scribed.engine.stall');

/** What the streams of one engine share. */
export interface StreamContext {
  /** Audio posted in batches and not decoded yet, over all of the engine's streams. */
  backlogTotal: DecodeBacklog;
  /** True once the engine is closing: a lost decoder is then not reported. */
  closed(): boolean;
  logger?: { warn(msg: string): void } | undefined;
}

/** The keepalive: a ping is kept in flight; the thread answers pings between turns of work
 * (at most TURN_SAMPLES of one decoder's audio), so one that has not answered within
 * `intervalMs` is stuck, and is terminated, which fails its streams like a crash
 * (ENGINE_FAILED). Loading a decoder holds a thread longer than a turn: while one loads the
 * clock is stopped. */
function startHeartbeat(slot: Slot, intervalMs: number, ctx: StreamContext): () => void {
  let pingSentAt: number | null = null;
  const thread = slot.thread;
  const tick = (): void => {
    if (thread.state === 'dead' || slot.state === 'dead' || ctx.closed()) return;
    const now = performance.now();
    if (pingSentAt === null) {
      pingSentAt = now;
      slot.call({ type: 'ping' }).then(
        () => {
          pingSentAt = null;
        },
        () => undefined,
      );
      return;
    }
    if (thread.loading > 0) return;
    if (now - Math.max(pingSentAt, thread.loadedAt) > intervalMs) {
      ctx.logger?.warn(`recognition worker missed its heartbeat (${intervalMs} ms): terminating it`);
      void thread.terminate(`recognition worker stopped answering (no heartbeat reply within ${intervalMs} ms)`);
    }
  };
  const timer = setInterval(tick, Math.max(50, Math.min(250, intervalMs / 4)));
  timer.unref();
  tick();
  return () => clearInterval(timer);
}

/** The stream over `slot`, opened for `req`. */
export function decoderStream(slot: Slot, req: StreamRequest, opened: OpenReply, ctx: StreamContext): RecognitionStream {
  const inputRate = req.inputRate;
  let released = false;
  let tail: Promise<unknown> = Promise.resolve();
  const stopHeartbeat = req.heartbeatIntervalMs ? startHeartbeat(slot, req.heartbeatIntervalMs, ctx) : () => undefined;
  slot.lostListeners = [];
  // Calls are queued on the decoder in order; `tail` lets release() wait for them.
  const enqueue = <T>(r: DecoderRequest, transfer: ArrayBuffer[] = []): Promise<T> => {
    if (released) return Promise.reject(new ScribedError('ENGINE_FAILED', 'stream already released'));
    const p = slot.call<T>(r, transfer);
    tail = p.catch(() => undefined);
    return p;
  };
  /** The caller's samples (shared read-only, RecognitionStream.accept) in a buffer of their
   * own that can move to the worker: one copy. Transferring the caller's buffer would detach
   * it under the caller; posting it untransferred would clone it twice (into the message and
   * out), and a view whole, with the rest of its underlying buffer. */
  const movable = (samples: Int16Array): Int16Array<ArrayBuffer> => samples.slice();
  const batching = batchingFor(req, enqueue, ctx.backlogTotal);
  const stream: RecognitionStream & { [kWorker]: Worker; [kStall]: (ms: number) => Promise<unknown> } = {
    inputRate,
    vocabulary: opened.vocabulary,
    [kWorker]: slot.thread.worker,
    [kStall]: (ms: number) => slot.call({ type: 'stall', ms }),
    accept(samples: Int16Array): Promise<AcceptResult> {
      if (batching !== null) return batching.accept(samples);
      const own = movable(samples);
      return enqueue<AcceptResult>({ type: 'accept', samples: own }, [own.buffer]);
    },
    detect(samples: Int16Array): Promise<Uint8Array> {
      const own = movable(samples);
      return enqueue<Uint8Array>({ type: 'detect', samples: own }, [own.buffer]);
    },
    finish(): Promise<FinalResult> {
      if (batching !== null) return batching.finish();
      return enqueue<FinalResult>({ type: 'finish' });
    },
    channelState(): Promise<number[] | null> {
      return enqueue<number[] | null>({ type: 'getChannel' });
    },
    setChannelState(state: readonly number[]): Promise<boolean> {
      return enqueue<boolean>({ type: 'setChannel', state: [...state] });
    },
    onPartial(listener): void {
      batching?.onPartial(listener);
    },
    onLost(listener: (err: Error) => void): void {
      if (released) return;
      slot.lostListeners.push((err) => {
        if (!released && !ctx.closed()) listener(err);
      });
    },
    async release(options?: { dropPending?: boolean }): Promise<void> {
      if (released) return;
      released = true;
      stopHeartbeat();
      slot.lostListeners = [];
      // Answered ahead of the queued work, which then ends at once (worker.ts, `drop`).
      if (options?.dropPending === true) await slot.call({ type: 'drop' }).catch(() => undefined);
      await tail;
      if (slot.retire) slot.destroy();
      else if (slot.state === 'busy' && !ctx.closed()) slot.state = 'idle';
    },
  };
  return stream;
}
