// RTP payload types scribed accepts and how each becomes session audio.
//
// Static types from RFC 3551: 0 = PCMU (G.711 mu-law, 8 kHz), 8 = PCMA (G.711 A-law,
// 8 kHz), 11 = L16 mono at 44.1 kHz. Dynamic types (96-127, negotiated out of band) are
// added with `--payload-type N=l16/RATE` (also `N=pcmu`, `N=pcma`). L16 is big-endian on
// the wire (RFC 3551 4.5.11) and becomes the session's little-endian `pcm_s16le_RATE`.
// Pure: no I/O.
import { ScribedError } from '../core/errors.js';
import { decodeAlaw, encodePcm16le, isInputEncodingName, type InputEncodingName } from '../core/audio/encodings.js';

export type PayloadCodec = 'PCMU' | 'PCMA' | 'L16';

export interface PayloadFormat {
  readonly payloadType: number;
  readonly codec: PayloadCodec;
  /** RTP timestamp clock; for these audio codecs it is also the sample rate. */
  readonly clockRateHz: number;
  /** Bytes per sample on the wire. */
  readonly bytesPerSample: 1 | 2;
  /** The wire byte that decodes to silence, used to fill lost packets before conversion:
   * 0xFF for mu-law, 0xD5 for A-law, 0x00 for linear PCM. */
  readonly silenceByte: number;
  /** The session input encoding the converted audio is sent as. */
  readonly sessionEncoding: InputEncodingName;
  /** Convert wire bytes (a whole number of samples) to session-encoding bytes. */
  toSession(wire: Uint8Array): Buffer;
}

/** A-law goes to the server as it is when the server knows `alaw_8000`; until then it is
 * decoded to 16-bit PCM, which is exact (every A-law code has one linear value). */
const ALAW_SESSION_ENCODING: string = 'alaw_8000';
const alawPassThrough = isInputEncodingName(ALAW_SESSION_ENCODING);

function pcmu(payloadType: number): PayloadFormat {
  return {
    payloadType,
    codec: 'PCMU',
    clockRateHz: 8000,
    bytesPerSample: 1,
    silenceByte: 0xff,
    sessionEncoding: 'mulaw_8000',
    toSession: (wire) => Buffer.from(wire.buffer, wire.byteOffset, wire.byteLength),
  };
}

function pcma(payloadType: number): PayloadFormat {
  return {
    payloadType,
    codec: 'PCMA',
    clockRateHz: 8000,
    bytesPerSample: 1,
    silenceByte: 0xd5,
    sessionEncoding: alawPassThrough ? (ALAW_SESSION_ENCODING as InputEncodingName) : 'pcm_s16le_8000',
    toSession: alawPassThrough
      ? (wire) => Buffer.from(wire.buffer, wire.byteOffset, wire.byteLength)
      : (wire) => {
          const pcm = encodePcm16le(decodeAlaw(wire));
          return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
        },
  };
}

function l16(payloadType: number, rateHz: number): PayloadFormat {
  const encoding = `pcm_s16le_${rateHz}`;
  if (!isInputEncodingName(encoding)) {
    throw new ScribedError(
      'VALIDATION_FAILED',
      `payload type ${payloadType}: L16 at ${rateHz} Hz has no session encoding (rates: 8000, 16000, 22050, 24000, 44100, 48000)`,
      {
        details: { field: 'payload-type' },
      },
    );
  }
  return {
    payloadType,
    codec: 'L16',
    clockRateHz: rateHz,
    bytesPerSample: 2,
    silenceByte: 0,
    sessionEncoding: encoding,
    toSession: (wire) => {
      const out = Buffer.from(wire); // a copy: swapping in place would alter the datagram
      return out.swap16();
    },
  };
}

export type PayloadTypeMap = ReadonlyMap<number, PayloadFormat>;

export function defaultPayloadTypes(): Map<number, PayloadFormat> {
  return new Map([
    [0, pcmu(0)],
    [8, pcma(8)],
    [11, l16(11, 44100)],
  ]);
}

function invalidSpec(spec: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `--payload-type ${spec}: ${reason}`, { details: { field: 'payload-type' } });
}

/** Parse `N=l16/RATE`, `N=pcmu[/8000]` or `N=pcma[/8000]`. Payload types 64-95 are refused:
 * with RTCP on the same port they are indistinguishable from RTCP (RFC 5761 4). */
export function parsePayloadTypeSpec(spec: string): PayloadFormat {
  const m = /^(\d{1,3})=([A-Za-z0-9]+)(?:\/(\d{1,6}))?(?:\/(\d{1,2}))?$/.exec(spec.trim());
  if (!m) invalidSpec(spec, 'expected N=l16/RATE, N=pcmu or N=pcma');
  const payloadType = Number(m[1]);
  if (payloadType > 127) invalidSpec(spec, 'payload type must be 0-127');
  if (payloadType >= 64 && payloadType <= 95) invalidSpec(spec, 'payload types 64-95 clash with RTCP packet types');
  const codec = m[2]!.toLowerCase();
  const rate = m[3] === undefined ? undefined : Number(m[3]);
  if (m[4] !== undefined && Number(m[4]) !== 1) invalidSpec(spec, 'only mono (1 channel) is supported');
  switch (codec) {
    case 'l16':
      if (rate === undefined) invalidSpec(spec, 'L16 needs a rate, e.g. 96=l16/16000');
      return l16(payloadType, rate);
    case 'pcmu':
    case 'pcma':
      if (rate !== undefined && rate !== 8000) invalidSpec(spec, `${codec.toUpperCase()} is 8000 Hz`);
      return codec === 'pcmu' ? pcmu(payloadType) : pcma(payloadType);
    default:
      return invalidSpec(spec, `unknown codec ${m[2]} (supported: l16, pcmu, pcma)`);
  }
}

/** The default map with the given `--payload-type` specs added (a spec may replace a default). */
export function buildPayloadTypeMap(specs: readonly string[]): Map<number, PayloadFormat> {
  const map = defaultPayloadTypes();
  for (const spec of specs) {
    const format = parsePayloadTypeSpec(spec);
    map.set(format.payloadType, format);
  }
  return map;
}
