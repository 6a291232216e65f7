// The AudioHook endpoint's metrics, named as the gateway's (docs/gateway.md, "Metrics") with
// `scribed_audiohook_` in place of `scribed_gateway_`, on the node's registry. Every labelled
// counter starts its label values at 0 (src/obs/metrics.ts says why). No conversation or
// session ids as labels: they are in the logs.
import { Counter, Gauge, type Registry } from 'prom-client';
import { seriesAtZero } from '../../obs/metrics.js';

export const REFUSAL_REASONS = [
  'headers',
  'auth',
  'signature',
  'signature_expired',
  'nonce_replayed',
  'media',
  'admission',
  'protocol',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];
export const INVALID_REASONS = [
  'too_large',
  'not_json',
  'malformed',
  'unknown_type',
  'bad_parameters',
  'seq',
  'serverseq',
  'session_id',
  'position',
  'state',
  'media',
  'audio',
] as const;
export const MESSAGE_TYPES = ['open', 'close', 'ping', 'paused', 'resumed', 'discarded', 'update', 'error'] as const;

function create(registry: Registry) {
  const registers = [registry];
  const m = {
    connections: new Counter({ name: 'scribed_audiohook_connections_total', help: 'AudioHook WebSocket connections upgraded', registers }),
    open: new Gauge({ name: 'scribed_audiohook_connections', help: 'AudioHook connections open now', registers }),
    refused: new Counter({
      name: 'scribed_audiohook_connections_refused_total',
      help: 'AudioHook connections refused, before the upgrade (headers, auth, signature, signature_expired, nonce_replayed) or at open (media, admission, protocol), by reason',
      labelNames: ['reason'],
      registers,
    }),
    messages: new Counter({
      name: 'scribed_audiohook_messages_total',
      help: 'AudioHook client text messages handled, by type',
      labelNames: ['type'],
      registers,
    }),
    invalid: new Counter({
      name: 'scribed_audiohook_messages_invalid_total',
      help: 'AudioHook client messages refused (answered with disconnect), by reason',
      labelNames: ['reason'],
      registers,
    }),
    audioSeconds: new Counter({
      name: 'scribed_audiohook_audio_received_seconds_total',
      help: 'Seconds of audio received over AudioHook, per channel (a stereo second counts 2)',
      registers,
    }),
    gapSeconds: new Counter({
      name: 'scribed_audiohook_gap_seconds_total',
      help: 'Seconds of audio the client discarded or paused, filled with silence per channel',
      registers,
    }),
    continued: new Counter({
      name: 'scribed_audiohook_sessions_continued_total',
      help: 'AudioHook sessions opened with continuedSessions (a reconnect resuming a conversation)',
      registers,
    }),
    reconnects: new Counter({
      name: 'scribed_audiohook_reconnects_requested_total',
      help: 'reconnect messages this node sent (drain)',
      registers,
    }),
    events: new Counter({
      name: 'scribed_audiohook_transcript_events_total',
      help: 'Transcript event messages sent, by finality',
      labelNames: ['final'],
      registers,
    }),
  };
  seriesAtZero(
    m.refused,
    REFUSAL_REASONS.map((reason) => ({ reason })),
  );
  seriesAtZero(
    m.invalid,
    INVALID_REASONS.map((reason) => ({ reason })),
  );
  seriesAtZero(
    m.messages,
    MESSAGE_TYPES.map((type) => ({ type })),
  );
  seriesAtZero(m.events, [{ final: 'true' }, { final: 'false' }]);
  return m;
}

export type AudiohookMetrics = ReturnType<typeof create>;
const byRegistry = new WeakMap<Registry, AudiohookMetrics>();

/** The metrics on `registry`, registered once however many apps share it. */
export function audiohookMetrics(registry: Registry): AudiohookMetrics {
  let m = byRegistry.get(registry);
  if (!m) {
    m = create(registry);
    byRegistry.set(registry, m);
  }
  return m;
}
