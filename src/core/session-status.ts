// The states a real-time session and its History row can be in. Pure types, here so the
// session state machine (session-state.ts) and the store (src/store/contract/sessions.ts,
// history.ts) share one definition without the core importing the store.

export type SessionState = 'RECORDING' | 'PAUSED' | 'CLOSED';
export type TranscriptionStatus = 'RECORDING' | 'PAUSED' | 'PROCESSING' | 'COMPLETED' | 'FAILED';

/** Why a real-time session ended, on its History row: a client's or a request's close, or the
 * idle expiry (a session with no socket and no audio for the configured time). */
export type SessionEndReason = 'session.closed' | 'session.expired';
