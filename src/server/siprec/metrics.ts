// The SIPREC recording server's metrics (`scribed_siprec_*`, docs/siprec.md "Metrics"), on the
// node's registry, named as the gateway's and AudioHook's. Every labelled counter starts its
// label values at 0. No Call-ID or session id as a label: they are in the logs.
import { Counter, Gauge, type Registry } from 'prom-client';
import { seriesAtZero } from '../../obs/metrics.js';

/** How a recording session (an INVITE that opens a dialog) ended up. */
export const SESSION_OUTCOMES = [
  'answered',
  'bad_request',
  'too_large',
  'not_acceptable',
  'busy',
  'cancelled',
  'forbidden',
  'failed',
] as const;
export type SessionOutcome = (typeof SESSION_OUTCOMES)[number];
/** Why an answered recording session ended. */
export const END_REASONS = ['bye', 'inactivity', 'hold', 'no_ack', 'shutdown'] as const;
export type EndReason = (typeof END_REASONS)[number];
export const REQUEST_METHODS = ['INVITE', 'REINVITE', 'UPDATE', 'ACK', 'BYE', 'CANCEL', 'OPTIONS', 'OTHER'] as const;
export const RTP_DROPS = [
  'malformed',
  'rtcp',
  'telephone_event',
  'unknown_payload',
  'late_or_duplicate',
  'srtp_auth',
  'srtp_replay',
] as const;

function create(registry: Registry) {
  const registers = [registry];
  const m = {
    sessions: new Counter({
      name: 'scribed_siprec_sessions_total',
      help: 'SIPREC recording sessions offered (initial INVITEs), by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    ended: new Counter({
      name: 'scribed_siprec_sessions_ended_total',
      help: 'Answered SIPREC recording sessions ended, by reason (inactivity, hold: the SBC went quiet without a BYE)',
      labelNames: ['reason'],
      registers,
    }),
    active: new Gauge({ name: 'scribed_siprec_sessions_active', help: 'SIPREC recording sessions (dialogs) open now', registers }),
    legs: new Gauge({ name: 'scribed_siprec_streams_active', help: 'Recorded streams (legs) open now', registers }),
    requests: new Counter({
      name: 'scribed_siprec_requests_total',
      help: 'SIP requests handled, by method (REINVITE: an INVITE inside a dialog), with transport',
      labelNames: ['method', 'transport'],
      registers,
    }),
    retransmissions: new Counter({
      name: 'scribed_siprec_retransmissions_total',
      help: 'Retransmitted SIP requests answered from the last response, and 2xx resent for want of an ACK',
      labelNames: ['kind'],
      registers,
    }),
    rtpPackets: new Counter({ name: 'scribed_siprec_rtp_packets_total', help: 'RTP packets received on recorded streams', registers }),
    rtpDropped: new Counter({
      name: 'scribed_siprec_rtp_packets_dropped_total',
      help: 'RTP packets not used as audio, by reason',
      labelNames: ['reason'],
      registers,
    }),
    rtpLost: new Counter({
      name: 'scribed_siprec_rtp_packets_lost_total',
      help: 'RTP packets declared lost by the jitter buffer (their time filled with silence)',
      registers,
    }),
    audioSeconds: new Counter({
      name: 'scribed_siprec_audio_seconds_total',
      help: 'Seconds of audio handed to the legs (silence for lost packets included)',
      registers,
    }),
    portsInUse: new Gauge({ name: 'scribed_siprec_rtp_ports_in_use', help: 'RTP ports of the configured range bound now', registers }),
  };
  seriesAtZero(
    m.sessions,
    SESSION_OUTCOMES.map((outcome) => ({ outcome })),
  );
  seriesAtZero(
    m.rtpDropped,
    RTP_DROPS.map((reason) => ({ reason })),
  );
  seriesAtZero(
    m.ended,
    END_REASONS.map((reason) => ({ reason })),
  );
  seriesAtZero(m.retransmissions, [{ kind: 'request' }, { kind: 'ok_resent' }]);
  return m;
}

export type SiprecMetrics = ReturnType<typeof create>;
const byRegistry = new WeakMap<Registry, SiprecMetrics>();

/** The metrics on `registry`, registered once however many apps share it. */
export function siprecMetrics(registry: Registry): SiprecMetrics {
  let m = byRegistry.get(registry);
  if (!m) {
    m = create(registry);
    byRegistry.set(registry, m);
  }
  return m;
}
