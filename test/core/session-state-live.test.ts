// Every cell of the live session's machine (src/core/session-state.ts, `step`): each phase
// (serving, closing, left) over each stored state, for every event, forbidden ones included.
// The session ends and leaves only through these events (src/session/session-end.ts).
import { describe, expect, it } from 'vitest';
import { ScribedError, type ErrorCode } from '../../src/core/errors.js';
import {
  serving,
  step,
  transition,
  type LiveEvent,
  type LiveState,
  type Phase,
  type SessionEffect,
  type SessionState,
} from '../../src/core/session-state.js';

type Outcome = { live: LiveState; effects: SessionEffect[] } | { error: ErrorCode; message?: RegExp };

const live = (stored: SessionState, phase: Phase): LiveState => ({ stored, phase });
const FINALIZE: SessionEffect[] = ['finalizeSegment', 'releaseDecoder', 'persist'];

const EVENTS: LiveEvent[] = [
  { type: 'socketAttached' },
  { type: 'socketLost' },
  { type: 'resume' },
  { type: 'resume', socketAttached: true },
  { type: 'close' },
  { type: 'shutdown' },
  { type: 'leave' },
  { type: 'closeWaits' },
  { type: 'closeDropped' },
];

// The phase's own cells; every other serving cell is the stored table's (session-state.test.ts).
const TABLE: Array<[LiveState, LiveEvent, Outcome]> = [
  // serving: the close waits only on an open session.
  [live('RECORDING', 'serving'), { type: 'closeWaits' }, { live: live('RECORDING', 'closing'), effects: [] }],
  [live('PAUSED', 'serving'), { type: 'closeWaits' }, { live: live('PAUSED', 'closing'), effects: [] }],
  [live('CLOSED', 'serving'), { type: 'closeWaits' }, { error: 'SESSION_CLOSED', message: /already closed/ }],
  [live('RECORDING', 'serving'), { type: 'closeDropped' }, { live: live('RECORDING', 'serving'), effects: [] }],
  [live('RECORDING', 'serving'), { type: 'leave' }, { live: live('RECORDING', 'left'), effects: [] }],
  [live('PAUSED', 'serving'), { type: 'leave' }, { live: live('PAUSED', 'left'), effects: [] }],
  [live('CLOSED', 'serving'), { type: 'leave' }, { live: live('CLOSED', 'left'), effects: [] }],

  // closing: nothing more is taken; the close itself ends it; a stop or a lost recognizer drops it.
  [live('RECORDING', 'closing'), { type: 'closeWaits' }, { error: 'SESSION_CLOSED', message: /already closing/ }],
  [live('RECORDING', 'closing'), { type: 'resume' }, { error: 'SESSION_CLOSED', message: /closing/ }],
  [live('PAUSED', 'closing'), { type: 'resume', socketAttached: true }, { error: 'SESSION_CLOSED', message: /closing/ }],
  [live('RECORDING', 'closing'), { type: 'close' }, { live: live('CLOSED', 'serving'), effects: FINALIZE }],
  [live('PAUSED', 'closing'), { type: 'close' }, { live: live('CLOSED', 'serving'), effects: FINALIZE }],
  [live('RECORDING', 'closing'), { type: 'socketLost' }, { live: live('PAUSED', 'closing'), effects: ['persist', 'holdDecoder'] }],
  [live('PAUSED', 'closing'), { type: 'socketLost' }, { live: live('PAUSED', 'closing'), effects: [] }],
  [live('RECORDING', 'closing'), { type: 'socketAttached' }, { live: live('RECORDING', 'closing'), effects: [] }],
  [live('PAUSED', 'closing'), { type: 'socketAttached' }, { error: 'RESUME_REQUIRED' }],
  [live('RECORDING', 'closing'), { type: 'shutdown' }, { live: live('PAUSED', 'serving'), effects: FINALIZE }],
  [live('PAUSED', 'closing'), { type: 'shutdown' }, { live: live('PAUSED', 'serving'), effects: ['finalizeSegment', 'releaseDecoder'] }],
  [live('RECORDING', 'closing'), { type: 'closeDropped' }, { live: live('RECORDING', 'serving'), effects: [] }],
  [live('PAUSED', 'closing'), { type: 'closeDropped' }, { live: live('PAUSED', 'serving'), effects: [] }],
  [live('RECORDING', 'closing'), { type: 'leave' }, { live: live('RECORDING', 'left'), effects: [] }],

  // left: nothing more happens here; the stored state it had is kept for callers to read.
  [live('RECORDING', 'left'), { type: 'leave' }, { live: live('RECORDING', 'left'), effects: [] }],
  [live('RECORDING', 'left'), { type: 'socketLost' }, { live: live('RECORDING', 'left'), effects: [] }],
  [live('PAUSED', 'left'), { type: 'shutdown' }, { live: live('PAUSED', 'left'), effects: [] }],
  [live('RECORDING', 'left'), { type: 'closeDropped' }, { live: live('RECORDING', 'left'), effects: [] }],
  [live('RECORDING', 'left'), { type: 'socketAttached' }, { error: 'SESSION_MOVED' }],
  [live('RECORDING', 'left'), { type: 'resume' }, { error: 'SESSION_MOVED' }],
  [live('PAUSED', 'left'), { type: 'resume', socketAttached: true }, { error: 'SESSION_MOVED' }],
  [live('RECORDING', 'left'), { type: 'close' }, { error: 'SESSION_MOVED' }],
  [live('CLOSED', 'left'), { type: 'close' }, { error: 'SESSION_MOVED' }],
  [live('RECORDING', 'left'), { type: 'closeWaits' }, { error: 'SESSION_MOVED' }],
];

function outcomeOf(state: LiveState, event: LiveEvent): Outcome {
  try {
    return step(state, event);
  } catch (err) {
    if (!(err instanceof ScribedError)) throw err;
    return { error: err.code, message: new RegExp(err.message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) };
  }
}

describe('the live session machine', () => {
  it.each(TABLE.map(([s, e, o]) => [`${s.stored}/${s.phase}`, JSON.stringify(e), s, e, o] as const))(
    '%s + %s',
    (_a, _b, state, event, outcome) => {
      const got = outcomeOf(state, event);
      if ('error' in outcome) {
        expect('error' in got && got.error).toBe(outcome.error);
        if (outcome.message) expect(() => step(state, event)).toThrow(outcome.message);
      } else {
        expect(got).toEqual(outcome);
      }
    },
  );

  it('serving is the stored machine: the same state and effects, or the same refusal', () => {
    for (const stored of ['RECORDING', 'PAUSED', 'CLOSED'] as const) {
      for (const event of EVENTS) {
        if (event.type === 'leave' || event.type === 'closeWaits' || event.type === 'closeDropped') continue;
        const got = outcomeOf(serving(stored), event);
        let want: Outcome;
        try {
          const r = transition(stored, event);
          want = { live: serving(r.state), effects: r.effects };
        } catch (err) {
          want = { error: (err as ScribedError).code };
        }
        if ('error' in want) expect('error' in got && got.error).toBe(want.error);
        else expect(got).toEqual(want);
      }
    }
  });

  it('answers every phase, stored state and event (no event falls through unhandled)', () => {
    for (const phase of ['serving', 'closing', 'left'] as const)
      for (const stored of ['RECORDING', 'PAUSED', 'CLOSED'] as const)
        for (const event of EVENTS) {
          // A closing session is never CLOSED (the close ends the phase).
          if (phase === 'closing' && stored === 'CLOSED') continue;
          const got = outcomeOf(live(stored, phase), event);
          if ('live' in got) {
            expect(got.live.phase === 'left').toBe(phase === 'left' || event.type === 'leave');
            if (phase === 'left') expect(got.effects).toEqual([]);
          }
        }
  });

  it('a session leaves only through `leave`, and never comes back from left', () => {
    let state = serving('RECORDING');
    for (const event of EVENTS) {
      const got = outcomeOf(state, event);
      if ('live' in got) state = got.live;
    }
    expect(state.phase).toBe('left');
    for (const event of EVENTS) {
      const got = outcomeOf(state, event);
      if ('live' in got) expect(got.live.phase).toBe('left');
      else expect(got.error).toBe('SESSION_MOVED');
    }
  });

  it('a deferred close: waits, refuses a second close and a resume, then closes once caught up', () => {
    let state = serving('RECORDING');
    state = step(state, { type: 'closeWaits' }).live;
    expect(state.phase).toBe('closing');
    expect(() => step(state, { type: 'closeWaits' })).toThrow(/already closing/);
    expect(() => step(state, { type: 'resume' })).toThrow(/closing/);
    state = step(state, { type: 'socketLost' }).live;
    expect(state).toEqual(live('PAUSED', 'closing'));
    const closed = step(state, { type: 'close' });
    expect(closed).toEqual({ live: live('CLOSED', 'serving'), effects: FINALIZE });
  });
});
