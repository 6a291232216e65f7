// The real-time session state machine, pure. The live session (src/session/live-session.ts)
// applies an event, gets the next state and the effects it must carry out, or a ScribedError
// when the event is not allowed in the current state (the error is what the client is told).
// The machine drives the session: the effects listed are exactly what the session does for
// the event (LiveSession.carryOut), in order, so the session's state has one source (issue
// 27; before, the effects were computed and thrown away).
//
// Two levels. `transition` is the stored state's machine (the table below): RECORDING, PAUSED
// and CLOSED, as the store and the History row know them. `step` is the live session's on
// this node: the stored state and a phase beside it, so what used to be flags are states:
//   serving  the session is this node's, nothing pending (CLOSED sessions too);
//   closing  its close waits behind deferred recognition (`closeWaits`): no audio, commits or
//            resumes, a second close refused; the close itself (`close`) ends it CLOSED, and
//            a stop or a lost recognizer drops the waiting close (`shutdown`, `closeDropped`),
//            the session then as its stored state says;
//   left     it left this node without closing (`leave`: moved on to another node or a newer
//            epoch, a resume elsewhere, a drain's handover, its shared spool failed, or, paused
//            and idle on a shared store, given up to any node; src/session/session-end.ts).
//            Nothing more happens here: every event is refused with SESSION_MOVED or ignored.
//
// | phase \ event | leave | closeWaits             | closeDropped | resume                  | close, socketAttached, socketLost | shutdown                  |
// |---------------|-------|------------------------|--------------|-------------------------|-----------------------------------|---------------------------|
// | serving       | left  | closing (1)            | serving      | as the table below      | as below                          | as below                  |
// | closing       | left  | SESSION_CLOSED         | serving      | SESSION_CLOSED          | as below (2)                      | as below, then serving    |
// | left          | left  | SESSION_MOVED          | left         | SESSION_MOVED           | SESSION_MOVED (socketLost: left)  | left                      |
// (1) SESSION_CLOSED when the stored state is CLOSED already.
// (2) `close` ends the phase (CLOSED, serving); a socket lost while closing pauses the stored
//     state as it would otherwise, and the close still waits.
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

/** The live session's phase on this node beside its stored state (see the table above). */
export type Phase = 'serving' | 'closing' | 'left';

/** Where a live session stands on this node. */
export interface LiveState {
  readonly stored: SessionState;
  readonly phase: Phase;
}

/** The stored state's events. */
export type SessionEvent =
  | { type: 'socketAttached' }
  | { type: 'socketLost' }
  /** `socketAttached`: a socket the server still believes open (half-open TCP) must go. */
  | { type: 'resume'; socketAttached?: boolean }
  | { type: 'close' }
  | { type: 'shutdown' };

/** The live session's events: the stored state's, and its phase's. */
export type LiveEvent =
  | SessionEvent
  /** The session leaves this node without closing (moved on, handed over, spool failed,
   * given up). */
  | { type: 'leave' }
  /** The close waits for deferred recognition to catch up to it. */
  | { type: 'closeWaits' }
  /** The waiting close was dropped with the deferred recognition (a lost recognizer). */
  | { type: 'closeDropped' };

export type SessionEffect = 'beginEpoch' | 'detachSocket' | 'finalizeSegment' | 'releaseDecoder' | 'persist' | 'holdDecoder';

export interface TransitionResult {
  state: SessionState;
  effects: SessionEffect[];
}

export interface StepResult {
  live: LiveState;
  effects: SessionEffect[];
}

function to(state: SessionState, ...effects: SessionEffect[]): TransitionResult {
  return { state, effects };
}

/** The stored state's machine (the second table above). */
export function transition(state: SessionState, event: SessionEvent): TransitionResult {
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

/** A session this node starts serving in its stored state. */
export function serving(stored: SessionState): LiveState {
  return { stored, phase: 'serving' };
}

/** The live session's machine (the first table above): the phase's events here, the stored
 * state's through `transition`. */
export function step(live: LiveState, event: LiveEvent): StepResult {
  const { stored, phase } = live;
  if (phase === 'left' || event.type === 'leave') return fromLeft(stored, event);
  switch (event.type) {
    case 'closeWaits':
      if (phase === 'closing') throw new ScribedError('SESSION_CLOSED', 'the session is already closing');
      if (stored === 'CLOSED') throw new ScribedError('SESSION_CLOSED', 'the session is already closed');
      return { live: { stored, phase: 'closing' }, effects: [] };
    case 'closeDropped':
      return { live: serving(stored), effects: [] };
    case 'resume':
      if (phase === 'closing')
        throw new ScribedError('SESSION_CLOSED', 'the session is closing: its close waits for the deferred recognition to catch up');
      break;
    case 'shutdown': {
      // The stop drops the waiting close with the deferred recognition.
      const r = transition(stored, event);
      return { live: serving(r.state), effects: r.effects };
    }
  }
  const r = transition(stored, event);
  return { live: { stored: r.state, phase: r.state === 'CLOSED' ? 'serving' : phase }, effects: r.effects };
}

/** Leaving, and every event once left: what leaving does is session-end.ts's; the
 * machine keeps the session from doing anything more here. */
function fromLeft(stored: SessionState, event: LiveEvent): StepResult {
  const left: StepResult = { live: { stored, phase: 'left' }, effects: [] };
  if (event.type === 'leave' || event.type === 'socketLost' || event.type === 'shutdown' || event.type === 'closeDropped') return left;
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
