// SRTP (RFC 3711) for recorded streams keyed by SDES (RFC 4568 `a=crypto`): the two suites SBCs
// offer for recording legs, AES_CM_128_HMAC_SHA1_80 and AES_CM_128_HMAC_SHA1_32. Receive side
// (unprotect: index and roll-over counter estimated, replay window, authentication tag checked
// in constant time, then AES counter-mode decryption) and send side (protect, which the tests
// use and a future sender could).
//
// Written on node:crypto (aes-128-ctr and HMAC-SHA1 are all the two suites need) rather than a
// library. The one maintained TypeScript SRTP implementation on npm, werift-rtp (part of the
// werift WebRTC project), can be keyed with SDES keys without WebRTC, but the source read (0.7)
// has no AES_CM_128_HMAC_SHA1_32 profile, which SBCs offer, moves its roll-over counter before
// the tag is checked, and brings eight dependencies (aes-js, lodash, ...). The receive path here
// is ~200 lines, checked against RFC 3711's key derivation vectors and against ffmpeg's SRTP
// sender (test/core/srtp.test.ts). Pure: no I/O, nothing here throws on packets from the network.
import { createCipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SRTP_SUITES = ['AES_CM_128_HMAC_SHA1_80', 'AES_CM_128_HMAC_SHA1_32'] as const;
export type SrtpSuite = (typeof SRTP_SUITES)[number];

const KEY_BYTES = 16;
const SALT_BYTES = 14;
const AUTH_KEY_BYTES = 20;
/** RFC 3711 3.3.2: a window of at least 64 indices behind the highest received. */
const REPLAY_WINDOW = 64;
/** Streams (SSRCs) one context tracks: a recording stream has one; a few for a sender's restart. */
const MAX_SSRCS = 8;

export interface SrtpKeys {
  suite: SrtpSuite;
  masterKey: Buffer;
  masterSalt: Buffer;
  /** Bytes of MKI each packet carries before its tag (RFC 4568 `|MKI:length`); 0 without. */
  mkiLength: number;
}

/** One `a=crypto` line's value (after `a=crypto:`), when it is a suite and key form we take. */
export interface CryptoAttribute {
  tag: number;
  keys: SrtpKeys;
}

function tagBytes(suite: SrtpSuite): number {
  return suite === 'AES_CM_128_HMAC_SHA1_80' ? 10 : 4;
}

/**
 * Reads `1 AES_CM_128_HMAC_SHA1_80 inline:<base64 key||salt>[|lifetime][|MKI:length]`. Null for
 * anything else: another suite, several keys, a session parameter (KDR, UNENCRYPTED_SRTP, ...),
 * a key of the wrong length; the offer's other lines may still fit.
 */
export function parseCryptoAttribute(value: string): CryptoAttribute | null {
  const m = /^\s*(\d{1,9})\s+([A-Za-z0-9_]+)\s+inline:([A-Za-z0-9+/=]+)((?:\|[^|\s;]+){0,2})\s*$/.exec(value);
  if (!m) return null;
  const suite = m[2] as SrtpSuite;
  if (!SRTP_SUITES.includes(suite)) return null;
  const keySalt = Buffer.from(m[3]!, 'base64');
  if (keySalt.length !== KEY_BYTES + SALT_BYTES) return null;
  let mkiLength = 0;
  for (const part of m[4]!.split('|').slice(1)) {
    const mki = /^(\d{1,3}):(\d{1,3})$/.exec(part);
    if (mki) {
      mkiLength = Number(mki[2]);
      if (mkiLength < 1 || mkiLength > 128) return null;
    } else if (!/^(2\^\d{1,2}|\d{1,20})$/.test(part)) return null;
  }
  return {
    tag: Number(m[1]),
    keys: { suite, masterKey: keySalt.subarray(0, KEY_BYTES), masterSalt: keySalt.subarray(KEY_BYTES), mkiLength },
  };
}

/** A fresh key for our side of a stream (the answer's `a=crypto`, RFC 4568 section 5.1.2). */
export function newSrtpKeys(suite: SrtpSuite): SrtpKeys {
  const keySalt = randomBytes(KEY_BYTES + SALT_BYTES);
  return { suite, masterKey: keySalt.subarray(0, KEY_BYTES), masterSalt: keySalt.subarray(KEY_BYTES), mkiLength: 0 };
}

/** The `a=crypto` value for `keys` under `tag`. */
export function formatCryptoAttribute(tag: number, keys: SrtpKeys): string {
  return `${tag} ${keys.suite} inline:${Buffer.concat([keys.masterKey, keys.masterSalt]).toString('base64')}`;
}

function aesCtr(key: Buffer, iv: Buffer, data: Buffer): Buffer {
  const c = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([c.update(data), c.final()]);
}

/** RFC 3711 4.3.1 with a key derivation rate of 0: the session key of `label` (0 encryption, 1
 * authentication, 2 salt), `length` bytes of AES-CM keyed by the master key. */
export function deriveSessionKey(masterKey: Buffer, masterSalt: Buffer, label: number, length: number): Buffer {
  const iv = Buffer.alloc(16);
  masterSalt.copy(iv, 0, 0, SALT_BYTES);
  iv[7]! ^= label;
  return aesCtr(masterKey, iv, Buffer.alloc(length));
}

interface SessionKeys {
  enc: Buffer;
  auth: Buffer;
  salt: Buffer;
}

function sessionKeys(k: SrtpKeys): SessionKeys {
  return {
    enc: deriveSessionKey(k.masterKey, k.masterSalt, 0, KEY_BYTES),
    auth: deriveSessionKey(k.masterKey, k.masterSalt, 1, AUTH_KEY_BYTES),
    salt: deriveSessionKey(k.masterKey, k.masterSalt, 2, SALT_BYTES),
  };
}

/** RFC 3711 4.1.1: IV = (salt * 2^16) XOR (SSRC * 2^64) XOR (index * 2^16). */
function packetIv(salt: Buffer, ssrc: number, index: number): Buffer {
  const iv = Buffer.alloc(16);
  salt.copy(iv, 0);
  iv.writeUInt32BE((iv.readUInt32BE(4) ^ ssrc) >>> 0, 4);
  const hi = Math.floor(index / 2 ** 32);
  const lo = index % 2 ** 32;
  iv.writeUInt16BE(iv.readUInt16BE(8) ^ hi, 8);
  iv.writeUInt32BE((iv.readUInt32BE(10) ^ lo) >>> 0, 10);
  return iv;
}

/** Bytes of the RTP header (fixed part, CSRCs, extension), or -1 when they overrun `end`. */
function headerLength(p: Buffer, end: number): number {
  if (end < 12 || p[0]! >> 6 !== 2) return -1;
  let n = 12 + 4 * (p[0]! & 0x0f);
  if (p[0]! & 0x10) {
    if (n + 4 > end) return -1;
    n += 4 + 4 * p.readUInt16BE(n + 2);
  }
  return n <= end ? n : -1;
}

interface StreamState {
  roc: number;
  /** Highest sequence number authenticated (s_l). */
  seq: number;
  /** Highest packet index authenticated, and a bitmap of the REPLAY_WINDOW before it (bit i: index - i seen). */
  top: number;
  seen: bigint;
}

export type Unprotected = { ok: true; packet: Buffer } | { ok: false; reason: 'malformed' | 'auth' | 'replay' };

/** One direction of one SRTP stream: the receiver's (unprotect) or the sender's (protect). */
export class SrtpContext {
  private readonly keys: SessionKeys;
  private readonly tagLength: number;
  private readonly streams = new Map<number, StreamState>();

  constructor(readonly params: SrtpKeys) {
    this.keys = sessionKeys(params);
    this.tagLength = tagBytes(params.suite);
  }

  /** The index of a packet (RFC 3711 3.3.1, appendix A): its ROC guessed from the highest seen. */
  private estimate(s: StreamState | undefined, seq: number): { roc: number; index: number } {
    if (!s) return { roc: 0, index: seq };
    let v = s.roc;
    if (s.seq < 32768) {
      if (seq - s.seq > 32768) v = s.roc - 1;
    } else if (s.seq - 32768 > seq) v = s.roc + 1;
    if (v < 0) v = 0; // before the first packet seen on a fresh stream: as if ROC 0
    return { roc: v, index: v * 65536 + seq };
  }

  private tag(authenticated: Buffer, roc: number): Buffer {
    const rocBytes = Buffer.alloc(4);
    rocBytes.writeUInt32BE(roc >>> 0);
    return createHmac('sha1', this.keys.auth).update(authenticated).update(rocBytes).digest().subarray(0, this.tagLength);
  }

  /** An SRTP packet in, its RTP packet out; or why it was refused (nothing about the stream changes then). */
  unprotect(packet: Buffer): Unprotected {
    const trailer = this.params.mkiLength + this.tagLength;
    const end = packet.length - trailer;
    const hl = headerLength(packet, end);
    if (hl < 0) return { ok: false, reason: 'malformed' };
    const ssrc = packet.readUInt32BE(8);
    const seq = packet.readUInt16BE(2);
    const state = this.streams.get(ssrc);
    const { roc, index } = this.estimate(state, seq);
    if (state) {
      const behind = state.top - index;
      if (behind >= REPLAY_WINDOW) return { ok: false, reason: 'replay' };
      if (behind >= 0 && (state.seen >> BigInt(behind)) & 1n) return { ok: false, reason: 'replay' };
    }
    const authenticated = packet.subarray(0, end);
    const expected = this.tag(authenticated, roc);
    const given = packet.subarray(packet.length - this.tagLength);
    if (!timingSafeEqual(expected, given)) return { ok: false, reason: 'auth' };
    const plain = aesCtr(this.keys.enc, packetIv(this.keys.salt, ssrc, index), packet.subarray(hl, end));
    this.accepted(ssrc, state, seq, roc, index);
    return { ok: true, packet: Buffer.concat([packet.subarray(0, hl), plain]) };
  }

  private accepted(ssrc: number, state: StreamState | undefined, seq: number, roc: number, index: number): void {
    if (!state) {
      if (this.streams.size >= MAX_SSRCS) this.streams.delete(this.streams.keys().next().value!);
      this.streams.set(ssrc, { roc, seq, top: index, seen: 1n });
      return;
    }
    if (index > state.top) {
      const shift = index - state.top;
      state.seen = shift >= REPLAY_WINDOW ? 1n : ((state.seen << BigInt(shift)) | 1n) & ((1n << BigInt(REPLAY_WINDOW)) - 1n);
      state.top = index;
      state.roc = roc;
      state.seq = seq;
    } else state.seen |= 1n << BigInt(state.top - index);
  }

  /** An RTP packet in, its SRTP packet out (the sender's side; index from the stream's own count). */
  protect(packet: Buffer): Buffer {
    const hl = headerLength(packet, packet.length);
    if (hl < 0) throw new Error('not an RTP packet');
    const ssrc = packet.readUInt32BE(8);
    const seq = packet.readUInt16BE(2);
    const state = this.streams.get(ssrc);
    let roc = state?.roc ?? 0;
    if (state && seq < state.seq && state.seq - seq > 32768) roc++;
    const index = roc * 65536 + seq;
    const cipher = aesCtr(this.keys.enc, packetIv(this.keys.salt, ssrc, index), packet.subarray(hl));
    const body = Buffer.concat([packet.subarray(0, hl), cipher]);
    if (!state) this.streams.set(ssrc, { roc, seq, top: index, seen: 1n });
    else if (index > state.top) Object.assign(state, { roc, seq, top: index });
    return Buffer.concat([body, Buffer.alloc(this.params.mkiLength), this.tag(body, roc)]);
  }
}
