// RTP and RTCP wire formats (RFC 3550 sections 5.1 and 6.6, RFC 5761 section 4).
//
// Pure: parses bytes that arrived from anyone on the network, so every path returns a typed
// result and nothing here throws on input. A packet that does not parse is a `Malformed`
// value naming why, which the receiver counts and drops.

export const RTP_VERSION = 2;
export const RTP_FIXED_HEADER_BYTES = 12;

export interface RtpPacket {
  readonly marker: boolean;
  readonly payloadType: number;
  /** 16-bit sequence number as sent (wraps at 65536). */
  readonly sequenceNumber: number;
  /** 32-bit media timestamp as sent (wraps at 2^32), in the payload format's clock. */
  readonly timestamp: number;
  readonly ssrc: number;
  readonly csrcs: readonly number[];
  /** The header extension's 16-bit profile field and body, when the X bit is set. */
  readonly extension: { readonly profile: number; readonly data: Uint8Array } | null;
  /** Media bytes, padding removed; may be empty (keepalives). A view into the datagram. */
  readonly payload: Uint8Array;
  readonly paddingBytes: number;
}

export const MALFORMED_REASONS = ['too_short', 'bad_version', 'csrc_overrun', 'extension_overrun', 'bad_padding', 'rtcp_not_rtp'] as const;
export type MalformedReason = (typeof MALFORMED_REASONS)[number];

export type ParseResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: MalformedReason };

function malformed<T>(reason: MalformedReason): ParseResult<T> {
  return { ok: false, reason };
}

/**
 * RFC 5761: on a port shared by RTP and RTCP, a second byte of 192-223 is an RTCP packet
 * type (SR 200, RR 201, SDES 202, BYE 203, APP 204, ...). RTP payload types 64-95 would
 * collide with them once the marker bit is set, so those are never valid RTP here.
 */
export function looksLikeRtcp(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[1]! >= 192 && bytes[1]! <= 223;
}

export function parseRtpPacket(bytes: Uint8Array): ParseResult<RtpPacket> {
  if (bytes.length < RTP_FIXED_HEADER_BYTES) return malformed('too_short');
  const b0 = bytes[0]!;
  const b1 = bytes[1]!;
  if (b0 >> 6 !== RTP_VERSION) return malformed('bad_version');
  if (looksLikeRtcp(bytes)) return malformed('rtcp_not_rtp');
  const hasPadding = (b0 & 0x20) !== 0;
  const hasExtension = (b0 & 0x10) !== 0;
  const csrcCount = b0 & 0x0f;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

  let offset = RTP_FIXED_HEADER_BYTES;
  if (offset + 4 * csrcCount > bytes.length) return malformed('csrc_overrun');
  const csrcs: number[] = [];
  for (let i = 0; i < csrcCount; i++) csrcs.push(view.getUint32(offset + 4 * i));
  offset += 4 * csrcCount;

  let extension: RtpPacket['extension'] = null;
  if (hasExtension) {
    if (offset + 4 > bytes.length) return malformed('extension_overrun');
    const profile = view.getUint16(offset);
    const words = view.getUint16(offset + 2);
    const end = offset + 4 + 4 * words;
    if (end > bytes.length) return malformed('extension_overrun');
    extension = { profile, data: bytes.subarray(offset + 4, end) };
    offset = end;
  }

  let end = bytes.length;
  let paddingBytes = 0;
  if (hasPadding) {
    // The last byte counts the padding, itself included: zero is invalid, and the padding
    // may not reach back into the header.
    paddingBytes = bytes[bytes.length - 1]!;
    if (paddingBytes === 0 || end - paddingBytes < offset) return malformed('bad_padding');
    end -= paddingBytes;
  }
  return {
    ok: true,
    value: {
      marker: (b1 & 0x80) !== 0,
      payloadType: b1 & 0x7f,
      sequenceNumber: view.getUint16(2),
      timestamp: view.getUint32(4),
      ssrc: view.getUint32(8),
      csrcs,
      extension,
      payload: bytes.subarray(offset, end),
      paddingBytes,
    },
  };
}

export interface RtpPacketFields {
  payloadType: number;
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  payload: Uint8Array;
  marker?: boolean;
  csrcs?: readonly number[];
  extension?: { profile: number; data: Uint8Array };
  paddingBytes?: number;
}

/** Serialize an RTP packet (for senders, tests and the loss measurement tool). Fields are
 * masked to their widths, so wrapped counters can be passed as they are. */
export function encodeRtpPacket(p: RtpPacketFields): Buffer {
  const csrcs = p.csrcs ?? [];
  const extData = p.extension?.data;
  if (extData && extData.length % 4 !== 0) throw new RangeError('extension data must be a whole number of 32-bit words');
  const padding = p.paddingBytes ?? 0;
  if (padding < 0 || padding > 255) throw new RangeError('padding must be 0-255 bytes');
  const headerBytes = RTP_FIXED_HEADER_BYTES + 4 * csrcs.length + (p.extension ? 4 + extData!.length : 0);
  const out = Buffer.alloc(headerBytes + p.payload.length + padding);
  out[0] = (RTP_VERSION << 6) | (padding > 0 ? 0x20 : 0) | (p.extension ? 0x10 : 0) | (csrcs.length & 0x0f);
  out[1] = (p.marker ? 0x80 : 0) | (p.payloadType & 0x7f);
  out.writeUInt16BE(p.sequenceNumber & 0xffff, 2);
  out.writeUInt32BE(p.timestamp >>> 0, 4);
  out.writeUInt32BE(p.ssrc >>> 0, 8);
  let off = RTP_FIXED_HEADER_BYTES;
  for (const c of csrcs) {
    out.writeUInt32BE(c >>> 0, off);
    off += 4;
  }
  if (p.extension) {
    out.writeUInt16BE(p.extension.profile & 0xffff, off);
    out.writeUInt16BE(extData!.length / 4, off + 2);
    out.set(extData!, off + 4);
    off += 4 + extData!.length;
  }
  out.set(p.payload, off);
  if (padding > 0) out[out.length - 1] = padding;
  return out;
}

// ------------------------------------------------------------------ RTCP

export const RTCP_BYE = 203;

export interface RtcpSummary {
  /** SSRCs that said goodbye, from every BYE in the compound packet. */
  readonly byeSsrcs: readonly number[];
  /** Packet types in order, e.g. [200, 202, 203] for SR + SDES + BYE. */
  readonly packetTypes: readonly number[];
}

/**
 * Walk a compound RTCP packet (RFC 3550 6.1): each part has version 2, a packet type and a
 * length in 32-bit words minus one. A part that runs past the datagram makes the whole
 * packet malformed, since its length can no longer be trusted.
 */
export function parseRtcpCompound(bytes: Uint8Array): ParseResult<RtcpSummary> {
  if (bytes.length < 4) return malformed('too_short');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const byeSsrcs: number[] = [];
  const packetTypes: number[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (offset + 4 > bytes.length) return malformed('too_short');
    const b0 = bytes[offset]!;
    if (b0 >> 6 !== RTP_VERSION) return malformed('bad_version');
    const packetType = bytes[offset + 1]!;
    const partBytes = 4 * (view.getUint16(offset + 2) + 1);
    if (offset + partBytes > bytes.length) return malformed('too_short');
    packetTypes.push(packetType);
    if (packetType === RTCP_BYE) {
      const sourceCount = b0 & 0x1f;
      if (4 + 4 * sourceCount > partBytes) return malformed('csrc_overrun');
      for (let i = 0; i < sourceCount; i++) byeSsrcs.push(view.getUint32(offset + 4 + 4 * i));
    }
    offset += partBytes;
  }
  return { ok: true, value: { byeSsrcs, packetTypes } };
}

/** A BYE for the given SSRCs (for senders and tests). */
export function encodeRtcpBye(ssrcs: readonly number[]): Buffer {
  const out = Buffer.alloc(4 + 4 * ssrcs.length);
  out[0] = (RTP_VERSION << 6) | (ssrcs.length & 0x1f);
  out[1] = RTCP_BYE;
  out.writeUInt16BE(ssrcs.length, 2);
  ssrcs.forEach((s, i) => out.writeUInt32BE(s >>> 0, 4 + 4 * i));
  return out;
}
