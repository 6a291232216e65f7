// Every cell of the stored state's transition table, forbidden ones included, and the History
// status mapping (the live phases: session-state-live.test.ts).
import { describe, expect, it } from 'vitest';
import { ScribedError, type ErrorCode } from '../../src/core/errors.js';
import {
  settleTaskStatus,
  taskStatus,
  transition,
  type SessionEvent,
  type SessionEffect,
  type SessionState,
} from '../../src/core/session-state.js';

type Outcome = { state: SessionState; effects: SessionEffect[] } | { error: ErrorCode };

const TABLE: Array<[SessionState, SessionEvent, Outcome]> = [
  ['RECORDING', { type: 'socketAttached' }, { state: 'RECORDING', effects: [] }],
  ['RECORDING', { type: 'socketLost' }, { state: 'PAUSED', effects: ['persist', 'holdDecoder'] }],
  ['RECORDING', { type: 'resume' }, { state: 'RECORDING', effects: ['beginEpoch'] }],
  ['RECORDING', { type: 'resume', socketAttached: true }, { state: 'RECORDING', effects: ['detachSocket', 'beginEpoch'] }],
  ['RECORDING', { type: 'close' }, { state: 'CLOSED', effects: ['finalizeSegment', 'releaseDecoder', 'persist'] }],
  ['RECORDING', { type: 'shutdown' }, { state: 'PAUSED', effects: ['finalizeSegment', 'releaseDecoder', 'persist'] }],

  ['PAUSED', { type: 'socketAttached' }, { error: 'RESUME_REQUIRED' }],
  ['PAUSED', { type: 'socketLost' }, { state: 'PAUSED', effects: [] }],
  ['PAUSED', { type: 'resume' }, { state: 'RECORDING', effects: ['beginEpoch'] }],
  ['PAUSED', { type: 'resume', socketAttached: true }, { state: 'RECORDING', effects: ['detachSocket', 'beginEpoch'] }],
  ['PAUSED', { type: 'close' }, { state: 'CLOSED', effects: ['finalizeSegment', 'releaseDecoder', 'persist'] }],
  ['PAUSED', { type: 'shutdown' }, { state: 'PAUSED', effects: ['finalizeSegment', 'releaseDecoder'] }],

  ['CLOSED', { type: 'socketAttached' }, { error: 'SESSION_CLOSED' }],
  ['CLOSED', { type: 'socketLost' }, { state: 'CLOSED', effects: [] }],
  ['CLOSED', { type: 'resume' }, { error: 'SESSION_CLOSED' }],
  ['CLOSED', { type: 'resume', socketAttached: true }, { error: 'SESSION_CLOSED' }],
  ['CLOSED', { type: 'close' }, { error: 'SESSION_CLOSED' }],
  ['CLOSED', { type: 'shutdown' }, { state: 'CLOSED', effects: [] }],
];

describe('session transitions', () => {
  it.each(TABLE.map(([s, e, o]) => [s, JSON.stringify(e), s, e, o] as const))('%s + %s', (_a, _b, state, event, outcome) => {
    if ('error' in outcome) {
      let caught: unknown;
      try {
        transition(state, event);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ScribedError);
      expect((caught as ScribedError).code).toBe(outcome.error);
    } else {
      expect(transition(state, event)).toEqual(outcome);
    }
  });

  it('covers every state and event', () => {
    const states = new Set(TABLE.map(([s]) => s));
    const events = new Set(TABLE.map(([, e]) => e.type));
    expect([...states].sort()).toEqual(['CLOSED', 'PAUSED', 'RECORDING']);
    expect([...events].sort()).toEqual(['close', 'resume', 'shutdown', 'socketAttached', 'socketLost']);
    expect(TABLE.length).toBe(18); // 3 states x 5 events, resume twice (with and without socket) per state
  });

  it('never leaves CLOSED', () => {
    for (const [state, event, outcome] of TABLE) {
      if (state === 'CLOSED' && !('error' in outcome)) expect(transition(state, event).state).toBe('CLOSED');
    }
  });
});

describe('History status', () => {
  it('mirrors the session while it is open', () => {
    expect(taskStatus('RECORDING')).toBe('RECORDING');
    expect(taskStatus('PAUSED')).toBe('PAUSED');
    expect(taskStatus('RECORDING', 'completed')).toBe('RECORDING');
  });

  it('reports the task once closed: PROCESSING, then COMPLETED or FAILED', () => {
    expect(taskStatus('CLOSED')).toBe('PROCESSING');
    expect(taskStatus('CLOSED', 'pending')).toBe('PROCESSING');
    expect(taskStatus('CLOSED', 'completed')).toBe('COMPLETED');
    expect(taskStatus('CLOSED', 'failed')).toBe('FAILED');
  });

  it('settles PROCESSING once and keeps the settled status', () => {
    expect(settleTaskStatus('PROCESSING', 'completed')).toBe('COMPLETED');
    expect(settleTaskStatus('PROCESSING', 'failed')).toBe('FAILED');
    expect(settleTaskStatus('COMPLETED', 'failed')).toBe('COMPLETED');
    expect(settleTaskStatus('FAILED', 'completed')).toBe('FAILED');
    expect(() => settleTaskStatus('RECORDING', 'completed')).toThrow(ScribedError);
    expect(() => settleTaskStatus('PAUSED', 'failed')).toThrow(/PAUSED/);
  });
});
