// A session's recognizer died (worker crash, missed heartbeat, a failed call). What it had
// been given of the open segment is gone from recognition: the segment is dropped (logged
// with its extent) rather than persisted with a made-up text. Audio stored and acknowledged
// but not given to it yet stays in the spool and in memory, and is fed to the session's next
// decoder first (replay.ts): acks never waited for recognition, so that audio must not be
// lost with the decoder.
import { ScribedError } from '../core/errors.js';
import type { BacklogItem } from '../core/recognition-backlog.js';
import type { RecognitionStream } from '../engine/types.js';
import type { DecoderHold } from './decoder-hold.js';
import type { Deferral } from './deferral.js';
import type { Replay } from './replay.js';
import type { RecognitionFeed } from './recognition-feed.js';
import type { SessionEvents } from './session-events.js';
import type { OpenSegment, SessionContext } from './session-context.js';

type AudioItem = Extract<BacklogItem, { kind: 'audio' }>;

/** Let the lost `stream` go and keep what it had not been given. False when the session had
 * already let it go (nothing done). The client is told ENGINE_FAILED here; closing its socket
 * is the caller's (on the session's queue). */
export function loseRecognizer(
  parts: { ctx: SessionContext; feed: RecognitionFeed; deferral: Deferral; events: SessionEvents; decoder: DecoderHold; replay: Replay },
  stream: RecognitionStream,
  err: unknown,
  seg: OpenSegment | null,
): boolean {
  const { ctx, feed, deferral, events } = parts;
  if (ctx.stream !== stream) return false;
  parts.decoder.drop();
  feed.stop();
  if (seg) ctx.endSegment(seg);
  const frames = feed.clear().filter((i): i is AudioItem => i.kind === 'audio');
  const deferred = deferral.active;
  deferral.end();
  const first = frames[0];
  parts.replay.keep(first ? { startSample: first.at, frames: frames.map((f) => f.samples) } : null);
  try {
    if (first) ctx.trimSpool(first.at);
    else ctx.emptySpool();
  } catch (e) {
    ctx.log.warn({ err: e }, 'could not trim the spool after a lost recognizer');
  }
  ctx.log.error(
    {
      err,
      deferred,
      lostSegment: seg ? { index: seg.index, startSample: seg.startSample.toString(), samples: seg.samples } : null,
      keptForReplaySamples: frames.reduce((n, f) => n + f.samples.length, 0),
    },
    'recognizer lost: open segment dropped',
  );
  events.emitError(
    new ScribedError('ENGINE_FAILED', 'the recognizer for this session failed; the open segment was lost. Resume to continue'),
  );
  return true;
}
