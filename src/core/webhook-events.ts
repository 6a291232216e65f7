// Webhook events (docs/webhooks.md): which state changes raise which event, and the payload
// each carries. Pure: the store calls these inside the transaction that makes the change, so
// the event is written to the outbox exactly when (and only if) the change commits.
import { API_BASE } from './protocol.js';
import type { SessionEndReason, TranscriptionStatus } from './session-status.js';

export const WEBHOOK_EVENT_TYPES = [
  'transcription.completed',
  'transcription.failed',
  'call.completed',
  'session.paused',
  'session.expired',
  'alert.triggered',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(v: unknown): v is WebhookEventType {
  return typeof v === 'string' && (WEBHOOK_EVENT_TYPES as readonly string[]).includes(v);
}

/** What the store knows of a History row when its status changes. */
export interface TranscriptionFacts {
  id: string;
  kind: 'realtime' | 'batch';
  sessionId: string | null;
  title: string;
  status: TranscriptionStatus;
  callId: string | null;
  speaker: string | null;
  sampleRateHz: number;
  audioSamples: bigint;
  createdAt: string;
  completedAt: string | null;
  /** Why a real-time session ended (null while open, and for batch rows). */
  endReason: SessionEndReason | null;
}

export interface CallFacts {
  id: string;
  externalId: string | null;
  title: string;
  legs: ReadonlyArray<{
    speaker: string;
    transcriptionId: string;
    sessionId: string | null;
    status: TranscriptionStatus;
    sampleRateHz: number;
    audioSamples: bigint;
  }>;
}

export interface WebhookEvent {
  type: WebhookEventType;
  timestamp: string;
  data: Record<string, unknown>;
}

/** The event a History row's status change raises, or null. A status written again (the
 * same value) raises nothing, so a retried write never raises a second event. */
export function transcriptionEventType(
  before: TranscriptionStatus,
  after: TranscriptionStatus,
  kind: 'realtime' | 'batch',
): WebhookEventType | null {
  if (before === after) return null;
  if (after === 'COMPLETED') return 'transcription.completed';
  if (after === 'FAILED') return 'transcription.failed';
  if (after === 'PAUSED' && before === 'RECORDING' && kind === 'realtime') return 'session.paused';
  return null;
}

const TERMINAL: ReadonlySet<TranscriptionStatus> = new Set(['COMPLETED', 'FAILED']);

/** True when every leg of the call has ended (completed or failed). */
export function callEnded(legs: CallFacts['legs']): boolean {
  return legs.length > 0 && legs.every((l) => TERMINAL.has(l.status));
}

function seconds(samples: bigint, rateHz: number): number {
  return rateHz > 0 ? Math.round((Number(samples) / rateHz) * 1000) / 1000 : 0;
}

/** `analytics`: a lone transcription's conversation figures and categories, on its completion
 * (docs/analytics.md); absent otherwise. */
export function transcriptionEvent(
  type: WebhookEventType,
  t: TranscriptionFacts,
  now: string,
  analytics?: Record<string, unknown>,
): WebhookEvent {
  return {
    type,
    timestamp: now,
    data: {
      transcriptionId: t.id,
      kind: t.kind,
      sessionId: t.sessionId,
      status: t.status,
      title: t.title,
      callId: t.callId,
      speaker: t.speaker,
      durationSeconds: seconds(t.audioSamples, t.sampleRateHz),
      createdAt: t.createdAt,
      completedAt: t.completedAt,
      ...(t.kind === 'realtime' ? { endReason: t.endReason } : {}),
      links: {
        transcription: `${API_BASE}/stt/transcriptions/${t.id}`,
        transcript: `${API_BASE}/stt/transcriptions/${t.id}/transcript`,
        ...(t.sessionId ? { session: `${API_BASE}/stt/realtime/sessions/${t.sessionId}` } : {}),
        ...(analytics ? { analytics: `${API_BASE}/stt/transcriptions/${t.id}/analytics` } : {}),
      },
      ...(analytics ? { analytics } : {}),
    },
  };
}

/** `analytics`: the call's conversation figures and matched categories (docs/analytics.md). */
export function callCompletedEvent(c: CallFacts, now: string, analytics?: Record<string, unknown>): WebhookEvent {
  const failed = c.legs.some((l) => l.status === 'FAILED');
  return {
    type: 'call.completed',
    timestamp: now,
    data: {
      callId: c.id,
      externalId: c.externalId,
      title: c.title,
      status: failed ? 'FAILED' : 'COMPLETED',
      durationSeconds: Math.max(0, ...c.legs.map((l) => seconds(l.audioSamples, l.sampleRateHz))),
      legs: c.legs.map((l) => ({ speaker: l.speaker, transcriptionId: l.transcriptionId, sessionId: l.sessionId, status: l.status })),
      links: {
        call: `${API_BASE}/stt/calls/${c.id}`,
        transcript: `${API_BASE}/stt/calls/${c.id}/transcript`,
        ...(analytics ? { analytics: `${API_BASE}/stt/calls/${c.id}/analytics` } : {}),
      },
      ...(analytics ? { analytics } : {}),
    },
  };
}
