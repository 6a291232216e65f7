// RTP ingest metrics (`scribed_rtp_*`), registered on the ingest process's registry (the
// client library's, so `--metrics-port` serves client and RTP metrics together). No
// per-SSRC labels: SSRCs are random per call and would grow the series without bound;
// per-stream figures are logged when a stream ends.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { MALFORMED_REASONS } from './packet.js';

/** Why a packet that parsed was still not placed. */
export const DROP_REASONS = ['unsupported_payload_type', 'other_payload_type', 'out_of_range', 'ended_stream', 'stream_limit'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

/** Reasons a datagram is malformed: the packet parser's, plus `bad_length` (a 16-bit payload
 * with an odd byte count) and `rtcp_malformed`. */
export type RtpMalformedReason = (typeof MALFORMED_REASONS)[number] | 'bad_length' | 'rtcp_malformed';

export const STREAM_END_REASONS = ['idle', 'bye', 'shutdown'] as const;
export type StreamEndReason = (typeof STREAM_END_REASONS)[number];

/** Why a call was given up (docs/rtp.md, Giving up on a call): its session could not be
 * created within --connect-timeout-ms (`unreachable`), the account had no Characters for
 * --credit-timeout-ms (`no_credit`), the server refused the session (`refused`), more ended
 * calls than --max-streams were still waiting for a session (`pending_limit`), or the process
 * stopped before its session existed (`shutdown`). */
export const GIVE_UP_REASONS = ['unreachable', 'no_credit', 'refused', 'pending_limit', 'shutdown'] as const;
export type StreamGiveUpReason = (typeof GIVE_UP_REASONS)[number];

export function createRtpMetrics(registry: Registry) {
  const registers = [registry];
  const metrics = {
    packetsReceived: new Counter({
      name: 'scribed_rtp_packets_received_total',
      help: 'RTP packets received that parsed (whatever happened to them next)',
      registers,
    }),
    packetsLost: new Counter({
      name: 'scribed_rtp_packets_lost_total',
      help: 'RTP packets never received in time: sequence holes filled with silence',
      registers,
    }),
    packetsReordered: new Counter({
      name: 'scribed_rtp_packets_reordered_total',
      help: 'RTP packets that arrived after a later one and were put back in order',
      registers,
    }),
    packetsDuplicate: new Counter({
      name: 'scribed_rtp_packets_duplicate_total',
      help: 'RTP packets received twice; the copy is dropped',
      registers,
    }),
    packetsLate: new Counter({
      name: 'scribed_rtp_packets_late_total',
      help: 'RTP packets that arrived after their slot was declared lost',
      registers,
    }),
    packetsMalformed: new Counter({
      name: 'scribed_rtp_packets_malformed_total',
      help: 'Datagrams dropped because they are not valid RTP/RTCP, by reason',
      labelNames: ['reason'],
      registers,
    }),
    packetsDropped: new Counter({
      name: 'scribed_rtp_packets_dropped_total',
      help: 'Valid RTP packets not placed, by reason',
      labelNames: ['reason'],
      registers,
    }),
    rtcpPackets: new Counter({ name: 'scribed_rtp_rtcp_packets_total', help: 'RTCP datagrams received', registers }),
    audioSeconds: new Counter({
      name: 'scribed_rtp_audio_seconds_total',
      help: 'Seconds of received audio placed on stream timelines',
      registers,
    }),
    silenceSeconds: new Counter({
      name: 'scribed_rtp_silence_fill_seconds_total',
      help: 'Seconds of silence placed for lost packets and pauses in sending',
      registers,
    }),
    concealedSeconds: new Counter({
      name: 'scribed_rtp_concealed_seconds_total',
      help: 'Seconds of lost audio filled by repeating the audio before it (--conceal-ms)',
      registers,
    }),
    jitter: new Histogram({
      name: 'scribed_rtp_jitter_seconds',
      help: 'RFC 3550 interarrival jitter of active streams, sampled once a second per stream',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32],
      registers,
    }),
    activeStreams: new Gauge({ name: 'scribed_rtp_streams', help: 'RTP streams (SSRC and source) being received', registers }),
    streamsStarted: new Counter({ name: 'scribed_rtp_streams_started_total', help: 'RTP streams started', registers }),
    streamsEnded: new Counter({
      name: 'scribed_rtp_streams_ended_total',
      help: 'RTP streams ended, by reason (idle, bye, shutdown)',
      labelNames: ['reason'],
      registers,
    }),
    streamsGivenUp: new Counter({
      name: 'scribed_rtp_streams_given_up_total',
      help: 'RTP calls whose audio could not be delivered to a session, by reason (unreachable, no_credit, refused, pending_limit, shutdown)',
      labelNames: ['reason'],
      registers,
    }),
  };
  // Zero the labelled series up front so dashboards and alerts see 0 rather than no data.
  for (const reason of [...MALFORMED_REASONS, 'bad_length', 'rtcp_malformed']) metrics.packetsMalformed.inc({ reason }, 0);
  for (const reason of DROP_REASONS) metrics.packetsDropped.inc({ reason }, 0);
  for (const reason of STREAM_END_REASONS) metrics.streamsEnded.inc({ reason }, 0);
  for (const reason of GIVE_UP_REASONS) metrics.streamsGivenUp.inc({ reason }, 0);
  return metrics;
}

export type RtpMetrics = ReturnType<typeof createRtpMetrics>;
