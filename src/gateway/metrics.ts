// Gateway metrics (`scribed_gateway_*`), on the ingest process's registry (the client
// library's, so `--metrics-port` serves client and gateway metrics together). Labels are the
// protocol and a fixed reason list: never a call or stream id (they would grow without bound;
// per-leg figures are logged when a leg ends).
import { Counter, Gauge, type Registry } from 'prom-client';
import { seriesAtZero } from '../obs/metrics.js';
import type { TwilioInvalidReason } from './twilio.js';
import type { ForkInvalidReason } from './fork.js';
import type { AudioSocketInvalidReason, AudioSocketMessage } from './audiosocket.js';

export const GATEWAY_PROTOCOLS = ['twilio', 'fork', 'audiosocket'] as const;
export type GatewayProtocol = (typeof GATEWAY_PROTOCOLS)[number];

/** The label values each protocol's counters take, started at 0 (a series born at its first
 * increment hides that increment from rate()). */
const MESSAGE_TYPES: Record<GatewayProtocol, readonly string[]> = {
  twilio: ['connected', 'start', 'media', 'mark', 'dtmf', 'stop'],
  fork: ['text', 'audio'],
  audiosocket: ['hangup', 'uuid', 'dtmf', 'audio', 'error'] satisfies ReadonlyArray<AudioSocketMessage['kind']>,
};
const INVALID_REASONS: Record<GatewayProtocol, readonly string[]> = {
  twilio: [
    'binary_frame',
    'not_json',
    'unknown_event',
    'bad_field',
    'bad_payload',
    'unsupported_format',
    'out_of_order',
    'bad_speaker',
  ] satisfies ReadonlyArray<TwilioInvalidReason | 'binary_frame'>,
  fork: [
    'not_json',
    'bad_field',
    'unsupported_rate',
    'bad_speaker',
    'text_after_metadata',
    'audio_before_metadata',
  ] satisfies readonly ForkInvalidReason[],
  audiosocket: [
    'unknown_kind',
    'bad_uuid',
    'bad_dtmf',
    'bad_audio_length',
    'unsupported_rate',
    'out_of_order',
  ] satisfies readonly AudioSocketInvalidReason[],
};
/** Refusals before a protocol is known use protocol "none". */
const REFUSALS = [
  { protocol: 'none', reason: 'stopping' },
  { protocol: 'none', reason: 'unknown_path' },
  { protocol: 'twilio', reason: 'auth' },
  { protocol: 'fork', reason: 'auth' },
];

export function createGatewayMetrics(registry: Registry) {
  const registers = [registry];
  const m = {
    connections: new Counter({
      name: 'scribed_gateway_connections_total',
      help: 'PBX connections accepted, by protocol',
      labelNames: ['protocol'],
      registers,
    }),
    openConnections: new Gauge({
      name: 'scribed_gateway_connections',
      help: 'PBX connections open, by protocol',
      labelNames: ['protocol'],
      registers,
    }),
    refused: new Counter({
      name: 'scribed_gateway_connections_refused_total',
      help: 'PBX connections refused (unknown path, failed authentication), by protocol and reason',
      labelNames: ['protocol', 'reason'],
      registers,
    }),
    messages: new Counter({
      name: 'scribed_gateway_messages_total',
      help: 'Protocol messages received, by protocol and type',
      labelNames: ['protocol', 'type'],
      registers,
    }),
    invalid: new Counter({
      name: 'scribed_gateway_messages_invalid_total',
      help: 'Protocol messages refused as malformed or out of order, by protocol and reason',
      labelNames: ['protocol', 'reason'],
      registers,
    }),
    audioSeconds: new Counter({
      name: 'scribed_gateway_audio_received_seconds_total',
      help: 'Seconds of leg audio received from PBXs (silence filled for timestamp gaps included)',
      labelNames: ['protocol'],
      registers,
    }),
    legs: new Counter({
      name: 'scribed_gateway_legs_total',
      help: 'Legs (one speaker of a call, one session) started, by protocol',
      labelNames: ['protocol'],
      registers,
    }),
    legsFailed: new Counter({
      name: 'scribed_gateway_legs_failed_total',
      help: 'Legs whose session could not be created or closed, by protocol',
      labelNames: ['protocol'],
      registers,
    }),
    openLegs: new Gauge({ name: 'scribed_gateway_legs', help: 'Legs being streamed', labelNames: ['protocol'], registers }),
  };
  for (const protocol of GATEWAY_PROTOCOLS) {
    m.connections.inc({ protocol }, 0);
    m.legs.inc({ protocol }, 0);
    m.legsFailed.inc({ protocol }, 0);
    m.audioSeconds.inc({ protocol }, 0);
    m.openConnections.set({ protocol }, 0);
    m.openLegs.set({ protocol }, 0);
    seriesAtZero(
      m.messages,
      MESSAGE_TYPES[protocol].map((type) => ({ protocol, type })),
    );
    seriesAtZero(
      m.invalid,
      INVALID_REASONS[protocol].map((reason) => ({ protocol, reason })),
    );
  }
  seriesAtZero(m.refused, REFUSALS);
  return m;
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
