// The input encodings a session may declare, and their decoders to 16-bit PCM.
//
// The encoding's rate is the session's timeline: every sample count the service reports
// (sampleOffset, capturedSamples, segment bounds) is in this rate, whatever rate the
// recognizer runs at internally. Pure: no I/O, no platform endianness assumptions.

export type AudioProfile = 'telephony' | 'wideband';

export interface InputEncoding {
  readonly name: InputEncodingName;
  readonly sampleRateHz: number;
  /** Bytes per mono sample on the wire: 2 for 16-bit PCM, 1 for G.711. */
  readonly bytesPerSample: 1 | 2;
  /** 8 kHz audio is narrowband telephone speech; recognizers pick a model by profile. */
  readonly profile: AudioProfile;
}

export const INPUT_ENCODING_NAMES = [
  'pcm_s16le_8000',
  'pcm_s16le_16000',
  'pcm_s16le_22050',
  'pcm_s16le_24000',
  'pcm_s16le_44100',
  'pcm_s16le_48000',
  'mulaw_8000',
  'alaw_8000',
] as const;

export type InputEncodingName = (typeof INPUT_ENCODING_NAMES)[number];

function pcm(name: InputEncodingName, sampleRateHz: number): InputEncoding {
  return { name, sampleRateHz, bytesPerSample: 2, profile: sampleRateHz === 8000 ? 'telephony' : 'wideband' };
}

export const INPUT_ENCODINGS: Readonly<Record<InputEncodingName, InputEncoding>> = Object.freeze({
  pcm_s16le_8000: pcm('pcm_s16le_8000', 8000),
  pcm_s16le_16000: pcm('pcm_s16le_16000', 16000),
  pcm_s16le_22050: pcm('pcm_s16le_22050', 22050),
  pcm_s16le_24000: pcm('pcm_s16le_24000', 24000),
  pcm_s16le_44100: pcm('pcm_s16le_44100', 44100),
  pcm_s16le_48000: pcm('pcm_s16le_48000', 48000),
  mulaw_8000: { name: 'mulaw_8000', sampleRateHz: 8000, bytesPerSample: 1, profile: 'telephony' },
  // G.711 A-law: what European PBXs and carriers send (RTP payload type 8).
  alaw_8000: { name: 'alaw_8000', sampleRateHz: 8000, bytesPerSample: 1, profile: 'telephony' },
});

/** The byte a G.711 encoding sends for silence (its quietest level); 0 for 16-bit PCM. */
export function silenceByteOf(encoding: InputEncodingName): number {
  if (encoding === 'mulaw_8000') return 0xff;
  if (encoding === 'alaw_8000') return 0xd5;
  return 0;
}

export const DEFAULT_INPUT_ENCODING: InputEncodingName = 'pcm_s16le_16000';

export function isInputEncodingName(value: unknown): value is InputEncodingName {
  return typeof value === 'string' && Object.hasOwn(INPUT_ENCODINGS, value);
}

// ------------------------------------------------------------------ G.711 tables
//
// Both laws store a sign bit, a 3-bit exponent (segment) and a 4-bit mantissa, with the
// byte's bits inverted on the wire (all bits for mu-law, every other bit for A-law) so that
// silence is not a run of zero bytes. Decoding is a 256-entry lookup built once here from
// the ITU-T G.711 formulas, so decoding is exact and branch-free per sample.

const MULAW_BIAS = 0x84; // 132: added before encoding so segment boundaries fall on powers of two
const MULAW_CLIP = 32635; // largest magnitude that still fits after the bias

function buildMulawDecodeTable(): Int16Array {
  const table = new Int16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    const u = ~byte & 0xff;
    const sign = u & 0x80;
    const exponent = (u >> 4) & 0x07;
    const mantissa = u & 0x0f;
    const magnitude = (((mantissa << 3) + MULAW_BIAS) << exponent) - MULAW_BIAS;
    table[byte] = sign ? -magnitude : magnitude;
  }
  return table;
}

function buildAlawDecodeTable(): Int16Array {
  const table = new Int16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    const a = byte ^ 0x55;
    const sign = a & 0x80; // in A-law a set sign bit means positive
    const exponent = (a >> 4) & 0x07;
    const mantissa = a & 0x0f;
    let magnitude = (mantissa << 4) + 8;
    if (exponent !== 0) magnitude = (magnitude + 0x100) << (exponent - 1);
    table[byte] = sign ? magnitude : -magnitude;
  }
  return table;
}

const MULAW_DECODE = buildMulawDecodeTable();
const ALAW_DECODE = buildAlawDecodeTable();

/** Decode one mu-law byte to a 16-bit sample. */
export function mulawToPcm16(byte: number): number {
  return MULAW_DECODE[byte & 0xff]!;
}

/** Decode one A-law byte to a 16-bit sample. */
export function alawToPcm16(byte: number): number {
  return ALAW_DECODE[byte & 0xff]!;
}

/** Encode one 16-bit sample to mu-law (G.711 segment search; for tests and clients). */
export function pcm16ToMulaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.trunc(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  if (s > MULAW_CLIP) s = MULAW_CLIP;
  s += MULAW_BIAS;
  // exponent = position of the highest set bit above bit 7 (the biased value is >= 2^7).
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** Encode one 16-bit sample to A-law (for tests and RTP PT 8 clients). */
export function pcm16ToAlaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.trunc(sample)));
  const sign = s >= 0 ? 0x80 : 0;
  if (s < 0) s = -s - 1; // A-law is symmetric around -0.5; keeps -32768 in range
  s >>= 3; // A-law works on 13-bit magnitudes
  let byte: number;
  if (s < 32) {
    byte = s >> 1; // segment 0 is linear
  } else {
    let exponent = 1;
    while (s >= 64 << (exponent - 1) && exponent < 7) exponent++;
    const mantissa = (s >> exponent) & 0x0f;
    byte = (exponent << 4) | mantissa;
  }
  return (byte | sign) ^ 0x55;
}

// ------------------------------------------------------------------ buffer codecs

/** Read little-endian signed 16-bit PCM byte by byte, so big-endian hosts decode the same. */
function decodePcm16le(bytes: Uint8Array): Int16Array {
  const count = bytes.length >> 1;
  const out = new Int16Array(count);
  for (let i = 0; i < count; i++) {
    const lo = bytes[2 * i]!;
    const hi = bytes[2 * i + 1]!;
    out[i] = (((hi << 8) | lo) << 16) >> 16; // sign-extend the 16-bit value
  }
  return out;
}

/** Decode a payload in `encoding` to 16-bit PCM samples. The caller has already checked
 * that the payload is a whole number of samples (see frame.ts); a trailing odd byte of PCM
 * is ignored rather than read past. */
export function decodeToPcm16(encoding: InputEncodingName, bytes: Uint8Array): Int16Array {
  const enc = INPUT_ENCODINGS[encoding];
  if (enc.bytesPerSample === 2) return decodePcm16le(bytes);
  return decodeG711(bytes, g711Table(encoding));
}

/** Decode `count` samples of a payload in `encoding`, from sample `from` on, straight into
 * `target` at `at`: a live frame's samples are made in one copy from the payload bytes (the
 * frame's array holds the gap's zeros first, then the accepted samples). */
export function decodePcm16Into(
  encoding: InputEncodingName,
  bytes: Uint8Array,
  from: number,
  count: number,
  target: Int16Array,
  at: number,
): void {
  if (INPUT_ENCODINGS[encoding].bytesPerSample === 2) {
    for (let i = 0; i < count; i++) {
      const b = 2 * (from + i);
      target[at + i] = (((bytes[b + 1]! << 8) | bytes[b]!) << 16) >> 16; // sign-extend the 16-bit value
    }
    return;
  }
  const table = g711Table(encoding);
  for (let i = 0; i < count; i++) target[at + i] = table[bytes[from + i]!]!;
}

function g711Table(encoding: InputEncodingName): Int16Array {
  return encoding === 'alaw_8000' ? ALAW_DECODE : MULAW_DECODE;
}

/** A-law buffer decoder (RTP payload type 8). */
export function decodeAlaw(bytes: Uint8Array): Int16Array {
  return decodeG711(bytes, ALAW_DECODE);
}

/** Mu-law buffer decoder (RTP payload type 0). */
export function decodeMulaw(bytes: Uint8Array): Int16Array {
  return decodeG711(bytes, MULAW_DECODE);
}

function decodeG711(bytes: Uint8Array, table: Int16Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = table[bytes[i]!]!;
  return out;
}

export function encodeMulaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = pcm16ToMulaw(samples[i]!);
  return out;
}

export function encodeAlaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = pcm16ToAlaw(samples[i]!);
  return out;
}

/** Write 16-bit PCM as little-endian bytes (for tests and clients). */
export function encodePcm16le(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length * 2);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i]! & 0xffff;
    out[2 * i] = v & 0xff;
    out[2 * i + 1] = v >> 8;
  }
  return out;
}
