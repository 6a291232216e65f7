// Batched decoding (StreamRequest.decodeBatchMs): a stream's accept() gathers frames until a
// batch's worth of audio waits, then posts the batch to its decoder without waiting for the
// result; the decoder wakes once per batch instead of once per frame.
//
// Copies of a frame's samples on the way to the worker (20 ms frames, 200 ms batches):
//   before: 2 - accept() sliced each frame (the caller's buffer was not trusted to stay
//           unchanged), and send() copied the slices into the batch;
//   now:    1 - accept() keeps the caller's array itself (RecognitionStream.accept: the caller
//           never changes it afterwards), and send() copies it into the batch, a buffer of its
//           own. That buffer is transferred to the worker, not cloned (a clone copies it twice
//           more: into the message, and out of it). A batch of a single accept() is copied as
//           well: transferring the caller's buffer would detach it under the caller, who may
//           still read it (its spool, a deferral backlog).
// The worker resamples straight from the transferred buffer.
import type { AcceptResult, FinalResult, RecognitionStream, StreamRequest } from './types.js';
import type { DecoderRequest } from './worker.js';

/** Batched decoding: how far decoding may fall behind the accepted audio before accept()
 * waits for it (the caller's acknowledgements then slow down and its client buffers). */
export const MAX_DECODE_BACKLOG_MS = 60_000;

/** A call on the stream's decoder, queued after its earlier calls; `transfer` is moved to the
 * worker. */
export type Enqueue = <T>(r: DecoderRequest, transfer?: ArrayBuffer[]) => Promise<T>;

/** Audio posted in batches and not decoded yet, over all streams of an engine. */
/** Undecoded samples over all streams, per input rate: whole numbers, so an idle node reads
 * exactly 0 (seconds summed as floats left residues such as 5.55e-17 behind). */
export type DecodeBacklog = Map<number, number>;

export function decodeBacklogSeconds(backlog: DecodeBacklog): number {
  let seconds = 0;
  for (const [rate, samples] of backlog) seconds += samples / rate;
  return seconds;
}

export type BatchedCalls = Pick<RecognitionStream, 'accept' | 'finish' | 'onPartial'>;

/** accept()/finish() of a stream with batched decoding, or null when the request decodes
 * each accept() at once. Batches go to the worker in order and are not awaited; their
 * results update the latest partial, and a failed batch fails the next call. */
export function batchingFor(req: StreamRequest, enqueue: Enqueue, backlogTotal: DecodeBacklog): BatchedCalls | null {
  if (!req.decodeBatchMs || req.decodeBatchMs <= 0) return null;
  const batchSamples = Math.max(1, Math.round((req.decodeBatchMs * req.inputRate) / 1000));
  const maxBacklog = Math.round((MAX_DECODE_BACKLOG_MS * req.inputRate) / 1000);
  /** The callers' arrays since the last batch, shared read-only (see the top). */
  let gathered: Int16Array[] = [];
  let gatheredSamples = 0;
  /** Batches sent and not answered yet, oldest first, with their sizes. */
  const inFlight: Array<{ done: Promise<void>; samples: number }> = [];
  let backlog = 0;
  let latest = { partial: '', partialSamples: 0 };
  let cpuMs = 0;
  let decodedSamples = 0;
  let failure: unknown = null;
  let partialListener: ((p: Pick<AcceptResult, 'partial' | 'partialSamples'>) => void) | null = null;
  /** Counts finish() calls: a batch's partial is reported only in its own utterance. */
  let utterance = 0;

  const send = (): void => {
    if (gatheredSamples === 0) return;
    // The frame's one copy (see the top): the batch is a buffer of its own, so it can move.
    const batch = new Int16Array(gatheredSamples);
    let at = 0;
    for (const part of gathered) {
      batch.set(part, at);
      at += part.length;
    }
    gathered = [];
    gatheredSamples = 0;
    const ofUtterance = utterance;
    const entry = {
      samples: batch.length,
      done: enqueue<AcceptResult>({ type: 'accept', samples: batch }, [batch.buffer]).then(
        (r) => {
          cpuMs += r.cpuMs;
          decodedSamples += r.decodedSamples;
          if (ofUtterance !== utterance || r.partial === latest.partial) return;
          latest = { partial: r.partial, partialSamples: r.partialSamples };
          partialListener?.(latest);
        },
        (err: unknown) => {
          failure ??= err;
        },
      ),
    };
    backlog += entry.samples;
    backlogTotal.set(req.inputRate, (backlogTotal.get(req.inputRate) ?? 0) + entry.samples);
    inFlight.push(entry);
    void entry.done.then(() => {
      backlog -= entry.samples;
      backlogTotal.set(req.inputRate, (backlogTotal.get(req.inputRate) ?? 0) - entry.samples);
      inFlight.splice(inFlight.indexOf(entry), 1);
    });
  };

  return {
    async accept(samples: Int16Array): Promise<AcceptResult> {
      if (failure !== null) throw failure;
      gathered.push(samples);
      gatheredSamples += samples.length;
      if (gatheredSamples >= batchSamples) send();
      while (backlog > maxBacklog && inFlight.length > 0) await inFlight[0]!.done;
      if (failure !== null) throw failure;
      // Partials go to the onPartial listener as batches are decoded.
      const result: AcceptResult = { partial: '', partialSamples: 0, cpuMs, decodedSamples };
      cpuMs = 0;
      decodedSamples = 0;
      return result;
    },
    async finish(): Promise<FinalResult> {
      if (failure !== null) throw failure;
      send();
      utterance += 1;
      latest = { partial: '', partialSamples: 0 };
      // The worker answers in order: every batch is decoded before the utterance ends.
      const final = await enqueue<FinalResult>({ type: 'finish' });
      if (failure !== null) throw failure;
      return final;
    },
    onPartial(listener) {
      partialListener = listener;
    },
  };
}
