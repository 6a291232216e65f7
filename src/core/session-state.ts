// The real-time session state machine, pure. The live session (src/session/live-session.ts)
// applies an event, gets the next state and the effects it must carry out, or a ScribedError
// when the event is not allowed in the current state (the error is what the client is told).
// The machine drives the session: the effects listed are exactly what the session does for
// the event (LiveSession.carryOut), in order, so the session's state has one source (issue
// 27; before, the effects were computed and thrown away).
//
// LEFT is the machine's own, never stored: the session left this node without closing (it
// moved on to another node or a newer epoch, its shared spool failed, or, paused and idle on a
// shared store, it was given up to any node; src/session/session-end.ts). From LEFT nothing more
// happens here: every event is refused with SESSION_MOVED or ignored.
//
// | state \ event           | leave | socketAttached, resume, close | socketLost, shutdown |
// |-------------------------|-------|-------------------------------|----------------------|
// | RECORDING, PAUSED, CLOSED | LEFT | as in the table below        | as below             |
// | LEFT                    | LEFT  | SESSION_MOVED                 | LEFT                 |
//
// The machine does not track whether a socket is attached (the live session owns that and
// answers SESSION_BUSY itself); the one place it matters, resume, says so in the event.
//
// | state \ event | socketAttached   | socketLost               | resume                                  | close                                        | shutdown                                     |
// |---------------|------------------|--------------------------|-----------------------------------------|----------------------------------------------|----------------------------------------------|
// | RECORDING     | RECORDING        | PAUSED: persist,         | RECORDING: (detachSocket when a socket  | CLOSED: finalizeSegment, releaseDecoder,     | PAUSED: finalizeSegment, releaseDecoder,     |
// |               |                  |   holdDecoder            |   is attached +) beginEpoch             |   persist                                    |   persist                                    |
// | PAUSED        | RESUME_REQUIRED  | PAUSED (1)               | RECORDING: (detachSocket +) beginEpoch  | CLOSED: finalizeSegment, releaseDecoder,     | PAUSED: finalizeSegment, releaseDecoder (2)  |
// |               |                  |                          |                                         |   persist                                    |                                              |
// | CLOSED        | SESSION_CLOSED   | CLOSED (3)               | SESSION_CLOSED                          | SESSION_CLOSED                               | CLOSED                                       |
//
// (1) a socket left attached by `shutdown` closes after the session is already PAUSED.
// (2) the server stopping does not change a session that is not recording; a decoder it
//     still holds (see holdDecoder) is finalized and released.
// (3) the socket closes after `close` (the server closes it with 1000).
// Effects: detachSocket closes the old socket; beginEpoch opens the next epoch in the store
// and the cursor; finalizeSegment ends the open segment (its final persisted, then sent);
// releaseDecoder gives the recognizer back; persist writes the state (and its History status,
// taskStatus) and the session's progress; holdDecoder keeps the recognizer a while for a
// quick resume. A cell with no effects listed has none. Codes in capitals are the error thrown.
import { ScribedError } from './errors.js';
import type { SessionState, TranscriptionStatus } from './session-status.js';

export type { SessionState };

/** Where a live session stands on this node: its stored state, or LEFT once it left. */
export type LiveState = SessionState | 'LEFT';

export type SessionEvent =
  /** The session leaves this node without closing (moved on, spool failed, given up). */
  | { type: 'leave' }
  | { type: 'socketAttached' }
  | { type: 'socketLost' }
  /** `socketAttached`: a socket the server still believes open (half-open TCP) must go. */
  | { type: 'resume'; socketAttached?: boolean }
  | { type: 'close' }
  | { type: 'shutdown' };

export type SessionEffect = 'beginEpoch' | 'detachSocket' | 'finalizeSegment' | 'releaseDecoder' | 'persist' | 'holdDecoder';

export interface TransitionResult<S extends LiveState = SessionState> {
  state: S;
  effects: SessionEffect[];
}

function to<S extends LiveState>(state: S, ...effects: SessionEffect[]): TransitionResult<S> {
  return { state, effects };
}

export function transition(state: SessionState, event: Exclude<SessionEvent, { type: 'leave' }>): TransitionResult;
export function transition(state: LiveState, event: SessionEvent): TransitionResult<LiveState>;
export function transition(state: LiveState, event: SessionEvent): TransitionResult<LiveState> {
  if (event.type === 'leave' || state === 'LEFT') return fromLeft(state, event);
  switch (event.type) {
    case 'socketAttached':
      if (state === 'RECORDING') return to('RECORDING');
      if (state === 'PAUSED') throw new ScribedError('RESUME_REQUIRED', 'the session is paused; call resume before opening a socket');
      throw new ScribedError('SESSION_CLOSED', 'the session is closed; it takes no more sockets');

    case 'socketLost':
      if (state === 'RECORDING') return to('PAUSED', 'persist', 'holdDecoder');
      return to(state);

    case 'resume':
      if (state === 'CLOSED') throw new ScribedError('SESSION_CLOSED', 'the session is closed; it cannot be resumed');
      return event.socketAttached ? to('RECORDING', 'detachSocket', 'beginEpoch') : to('RECORDING', 'beginEpoch');

    case 'close':
      if (state === 'CLOSED') throw new ScribedError('SESSION_CLOSED', 'the session is already closed');
      return to('CLOSED', 'finalizeSegment', 'releaseDecoder', 'persist');

    case 'shutdown':
      if (state === 'RECORDING') return to('PAUSED', 'finalizeSegment', 'releaseDecoder', 'persist');
      if (state === 'PAUSED') return to('PAUSED', 'finalizeSegment', 'releaseDecoder');
      return to(state);
  }
}

/** Leaving, and every event once left: what leaving does is session-end.ts's; the
 * machine keeps the session from doing anything more here. */
function fromLeft(state: LiveState, event: SessionEvent): TransitionResult<LiveState> {
  if (event.type === 'leave') return to('LEFT');
  if (event.type === 'socketLost' || event.type === 'shutdown') return to(state);
  throw new ScribedError('SESSION_MOVED');
}

/**
 * The History (transcription) status for a session state. While the session is open the
 * History row mirrors it; once CLOSED the row reports the task: PROCESSING until the final
 * segment is persisted, then COMPLETED, or FAILED if finalizing failed.
 */
export type CloseOutcome = 'pending' | 'completed' | 'failed';

export function taskStatus(state: SessionState, outcome: CloseOutcome = 'pending'): TranscriptionStatus {
  if (state === 'RECORDING') return 'RECORDING';
  if (state === 'PAUSED') return 'PAUSED';
  if (outcome === 'completed') return 'COMPLETED';
  if (outcome === 'failed') return 'FAILED';
  return 'PROCESSING';
}

/** Task status moves one way after close: PROCESSING -> COMPLETED or FAILED, and stays. */
export function settleTaskStatus(current: TranscriptionStatus, outcome: 'completed' | 'failed'): TranscriptionStatus {
  if (current === 'COMPLETED' || current === 'FAILED') return current;
  if (current !== 'PROCESSING') {
    throw new ScribedError('INTERNAL', `a transcription in ${current} cannot settle; it must be PROCESSING (closed) first`);
  }
  return outcome === 'completed' ? 'COMPLETED' : 'FAILED';
}
