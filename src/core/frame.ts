// The socket frame codec (docs/protocol.md). Binary messages are audio frames with a fixed
// 16-byte little-endian header; text messages are JSON control objects. Every malformed
// input becomes a ScribedError with a precise reason, so the session can report it and
// carry on with the next frame.
import { ScribedError } from './errors.js';
import { INPUT_ENCODINGS, type InputEncodingName } from './audio/encodings.js';

export const AUDIO_HEADER_BYTES = 16;
export const DEFAULT_MAX_FRAME_PAYLOAD_BYTES = 131072;
export const FRAME_TYPE_AUDIO = 0x01;
export const FRAME_HEADER_VERSION = 1;
export const DEFAULT_MAX_CONTROL_BYTES = 4096;
export const MAX_PING_ID_CHARS = 64;

/** sampleOffset travels as uint64 but must stay exact in a JS number. */
const MAX_SAMPLE_OFFSET_EXCLUSIVE = 2n ** 53n;

export interface AudioFrameInput {
  epoch: number;
  sampleOffset: number | bigint;
  payload: Uint8Array;
}

/** Audio as every adapter hands it to a session (LiveSession.audio): the samples of the
 * session's input encoding from `sampleOffset` of the client's `epoch`. The native socket reads
 * it out of a binary frame (decodeAudioFrame); other adapters number their audio themselves. */
export interface AudioInput {
  epoch: number;
  sampleOffset: number;
  payload: Uint8Array;
}

export interface AudioFrame {
  epoch: number;
  sampleOffset: number;
  payload: Uint8Array;
  /** Number of samples in the payload for the session's encoding. */
  samples: number;
}

export function encodeAudioFrame(frame: AudioFrameInput): Uint8Array {
  const { epoch, payload } = frame;
  const offset = BigInt(frame.sampleOffset);
  if (!Number.isInteger(epoch) || epoch < 0 || epoch > 0xffffffff) throw new RangeError(`epoch ${epoch} is not a uint32`);
  if (offset < 0n || offset >= 2n ** 64n) throw new RangeError(`sampleOffset ${offset} is not a uint64`);
  const out = new Uint8Array(AUDIO_HEADER_BYTES + payload.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, FRAME_TYPE_AUDIO);
  view.setUint8(1, FRAME_HEADER_VERSION);
  view.setUint16(2, 0, true);
  view.setUint32(4, epoch, true);
  view.setBigUint64(8, offset, true);
  out.set(payload, AUDIO_HEADER_BYTES);
  return out;
}

/**
 * Decode and validate one binary audio frame. Check order is the wire order (header, then
 * payload), so a frame with several faults always reports the same one.
 */
export function decodeAudioFrame(buf: Uint8Array, encoding: InputEncodingName, maxPayloadBytes: number): AudioFrame {
  if (buf.byteLength < AUDIO_HEADER_BYTES) {
    throw new ScribedError('MALFORMED_FRAME', `audio frame is ${buf.byteLength} bytes; the header alone is ${AUDIO_HEADER_BYTES}`);
  }
  // DataView with explicit little-endian reads: independent of host byte order, and it
  // honours the view's byteOffset (ws hands out slices of a larger buffer).
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const type = view.getUint8(0);
  if (type !== FRAME_TYPE_AUDIO) {
    throw new ScribedError('MALFORMED_FRAME', `unknown frame type 0x${type.toString(16).padStart(2, '0')}; audio frames are 0x01`);
  }
  const version = view.getUint8(1);
  if (version !== FRAME_HEADER_VERSION) {
    throw new ScribedError('MALFORMED_FRAME', `unsupported header version ${version}; expected ${FRAME_HEADER_VERSION}`);
  }
  if (view.getUint16(2, true) !== 0) {
    throw new ScribedError('MALFORMED_FRAME', 'reserved header bytes 2-3 must be zero');
  }
  const epoch = view.getUint32(4, true);
  const offset = view.getBigUint64(8, true);
  if (offset >= MAX_SAMPLE_OFFSET_EXCLUSIVE) {
    throw new ScribedError('MALFORMED_FRAME', `sampleOffset ${offset} is not below 2^53`);
  }
  return {
    epoch,
    sampleOffset: Number(offset),
    payload: buf.subarray(AUDIO_HEADER_BYTES),
    samples: payloadSamples(buf.byteLength - AUDIO_HEADER_BYTES, encoding, maxPayloadBytes),
  };
}

/** The samples in an audio payload of `payloadBytes` for the session's encoding, or the
 * reason it cannot be taken. The native frame's payload is checked with it at the socket's
 * edge, and every adapter's audio again by the session (session/frame-intake.ts), so a
 * payload from any adapter holds whole samples within the limit. */
export function payloadSamples(payloadBytes: number, encoding: InputEncodingName, maxPayloadBytes: number): number {
  if (payloadBytes === 0) throw new ScribedError('MALFORMED_FRAME', 'audio frame has an empty payload');
  if (payloadBytes > maxPayloadBytes) {
    throw new ScribedError('FRAME_TOO_LARGE', `payload is ${payloadBytes} bytes; the limit is ${maxPayloadBytes}`);
  }
  const bytesPerSample = INPUT_ENCODINGS[encoding].bytesPerSample;
  if (payloadBytes % bytesPerSample !== 0) {
    throw new ScribedError(
      'INVALID_SAMPLE_SIZE',
      `payload is ${payloadBytes} bytes, not a whole number of ${bytesPerSample}-byte samples for ${encoding}`,
    );
  }
  return payloadBytes / bytesPerSample;
}

// ------------------------------------------------------------------ control messages

export type ControlMessage = { type: 'commit' } | { type: 'close' } | { type: 'ping'; id?: string };

/**
 * Parse a client text frame. Extra fields are ignored (forward compatibility: a newer
 * client may send more); the size bound is on UTF-8 bytes, what the socket carried.
 */
export function parseControlMessage(text: string, maxBytes = DEFAULT_MAX_CONTROL_BYTES): ControlMessage {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new ScribedError('MALFORMED_FRAME', `control message is ${bytes} bytes; the limit is ${maxBytes}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ScribedError('MALFORMED_FRAME', 'control message is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ScribedError('MALFORMED_FRAME', 'control message must be a JSON object');
  }
  const msg = value as Record<string, unknown>;
  if (!Object.hasOwn(msg, 'type')) throw new ScribedError('MALFORMED_FRAME', 'control message has no type');
  const type = msg.type;
  if (typeof type !== 'string') throw new ScribedError('MALFORMED_FRAME', 'control message type must be a string');
  switch (type) {
    case 'commit':
      return { type: 'commit' };
    case 'close':
      return { type: 'close' };
    case 'ping': {
      const id = msg.id;
      if (id === undefined) return { type: 'ping' };
      if (typeof id !== 'string') throw new ScribedError('MALFORMED_FRAME', 'ping id must be a string');
      if ([...id].length > MAX_PING_ID_CHARS) {
        throw new ScribedError('MALFORMED_FRAME', `ping id is longer than ${MAX_PING_ID_CHARS} characters`);
      }
      return { type: 'ping', id };
    }
    default:
      throw new ScribedError('MALFORMED_FRAME', `unknown control message type ${JSON.stringify(type.slice(0, 40))}`);
  }
}
