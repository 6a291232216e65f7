// Asterisk AudioSocket (docs/gateway.md names the sources): a TCP stream of messages, each a
// 1-byte kind, a 2-byte big-endian payload length and the payload. Kinds: 0x00 hang-up,
// 0x01 the stream's UUID (16 bytes, always first), 0x03 a DTMF digit (1 ASCII byte), 0x10
// signed linear 16-bit little-endian mono at 8 kHz, 0x11-0x18 the same at 12, 16, 24, 32, 44.1,
// 48, 96 and 192 kHz (Asterisk's res_audiosocket), 0xff an error (optional code).
// Pure: framing, validation and the per-connection order, no I/O.

export const AUDIOSOCKET_KIND = {
  hangup: 0x00,
  uuid: 0x01,
  dtmf: 0x03,
  slin: 0x10,
  error: 0xff,
} as const;

/** Audio kinds and their rates, as Asterisk's res_audiosocket numbers them. */
export const AUDIOSOCKET_AUDIO_RATES: ReadonlyMap<number, number> = new Map([
  [0x10, 8000],
  [0x11, 12000],
  [0x12, 16000],
  [0x13, 24000],
  [0x14, 32000],
  [0x15, 44100],
  [0x16, 48000],
  [0x17, 96000],
  [0x18, 192000],
]);

/** Rates a session takes as 16-bit PCM; the others are refused (no resampling here). */
export const AUDIOSOCKET_SESSION_RATES: ReadonlySet<number> = new Set([8000, 16000, 24000, 44100, 48000]);

export type AudioSocketMessage =
  | { kind: 'hangup' }
  | { kind: 'uuid'; uuid: string }
  | { kind: 'dtmf'; digit: string }
  | { kind: 'audio'; rateHz: number; payload: Buffer }
  | { kind: 'error'; code: number | null };

export type AudioSocketInvalidReason = 'unknown_kind' | 'bad_uuid' | 'bad_dtmf' | 'bad_audio_length' | 'unsupported_rate' | 'out_of_order';

export type AudioSocketItem = { ok: true; message: AudioSocketMessage } | { ok: false; reason: AudioSocketInvalidReason; detail: string };

/** One message on the wire. */
export function encodeAudioSocketMessage(kind: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  if (payload.length > 0xffff) throw new RangeError('an AudioSocket payload is at most 65535 bytes');
  const head = Buffer.alloc(3);
  head.writeUInt8(kind, 0);
  head.writeUInt16BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** 16 bytes to the canonical 8-4-4-4-12 form. */
export function formatUuid(bytes: Buffer): string {
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function uuidBytes(uuid: string): Buffer {
  const hex = uuid.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new RangeError('not a UUID');
  return Buffer.from(hex, 'hex');
}

function decode(kind: number, payload: Buffer): AudioSocketItem {
  switch (kind) {
    case AUDIOSOCKET_KIND.hangup:
      return { ok: true, message: { kind: 'hangup' } };
    case AUDIOSOCKET_KIND.uuid:
      if (payload.length !== 16) return { ok: false, reason: 'bad_uuid', detail: `UUID payload of ${payload.length} bytes, not 16` };
      return { ok: true, message: { kind: 'uuid', uuid: formatUuid(payload) } };
    case AUDIOSOCKET_KIND.dtmf: {
      const digit = payload.length === 1 ? String.fromCharCode(payload[0]!) : '';
      if (!/^[0-9A-D*#]$/.test(digit)) return { ok: false, reason: 'bad_dtmf', detail: 'DTMF payload is not one of 0-9 A-D * #' };
      return { ok: true, message: { kind: 'dtmf', digit } };
    }
    case AUDIOSOCKET_KIND.error:
      return { ok: true, message: { kind: 'error', code: payload.length > 0 ? payload[0]! : null } };
    default: {
      const rateHz = AUDIOSOCKET_AUDIO_RATES.get(kind);
      if (rateHz === undefined) return { ok: false, reason: 'unknown_kind', detail: `kind 0x${kind.toString(16).padStart(2, '0')}` };
      if (payload.length === 0 || payload.length % 2 !== 0)
        return { ok: false, reason: 'bad_audio_length', detail: `audio payload of ${payload.length} bytes (16-bit samples)` };
      return { ok: true, message: { kind: 'audio', rateHz, payload } };
    }
  }
}

/** Reassembles messages from TCP reads of any size. */
export class AudioSocketReader {
  private buf: Buffer = Buffer.alloc(0);

  push(data: Buffer): AudioSocketItem[] {
    this.buf = this.buf.length > 0 ? Buffer.concat([this.buf, data]) : data;
    const out: AudioSocketItem[] = [];
    let off = 0;
    while (this.buf.length - off >= 3) {
      const kind = this.buf.readUInt8(off);
      const len = this.buf.readUInt16BE(off + 1);
      if (this.buf.length - off < 3 + len) break;
      out.push(decode(kind, Buffer.from(this.buf.subarray(off + 3, off + 3 + len))));
      off += 3 + len;
    }
    this.buf = this.buf.subarray(off);
    return out;
  }

  /** Bytes of an incomplete message at the end of the stream. */
  get pendingBytes(): number {
    return this.buf.length;
  }
}

/**
 * The order of one connection: the UUID first, then audio of one rate (a session has one
 * encoding), DTMF and at most one hang-up. Asterisk sends it so; what breaks it is refused.
 */
export class AudioSocketState {
  uuid: string | null = null;
  rateHz: number | null = null;
  hungUp = false;

  check(message: AudioSocketMessage): { reason: AudioSocketInvalidReason; detail: string } | null {
    if (this.hungUp) return { reason: 'out_of_order', detail: 'message after hang-up' };
    if (message.kind === 'uuid') return this.uuid ? { reason: 'out_of_order', detail: 'a second UUID' } : null;
    if (message.kind === 'hangup' || message.kind === 'error') return null;
    if (!this.uuid) return { reason: 'out_of_order', detail: `${message.kind} before the UUID` };
    if (message.kind === 'audio') {
      if (!AUDIOSOCKET_SESSION_RATES.has(message.rateHz))
        return {
          reason: 'unsupported_rate',
          detail: `slin at ${message.rateHz} Hz (sessions take ${[...AUDIOSOCKET_SESSION_RATES].join(', ')})`,
        };
      if (this.rateHz !== null && this.rateHz !== message.rateHz)
        return { reason: 'out_of_order', detail: `rate changed from ${this.rateHz} to ${message.rateHz} Hz mid-stream` };
    }
    return null;
  }

  apply(message: AudioSocketMessage): void {
    if (message.kind === 'uuid') this.uuid = message.uuid;
    if (message.kind === 'audio') this.rateHz = message.rateHz;
    if (message.kind === 'hangup') this.hungUp = true;
  }
}

/**
 * Pairing: AudioSocket carries one direction of audio per connection and nothing but a UUID to
 * say which call it belongs to. The gateway's convention (docs/gateway.md): the legs of one
 * call carry UUIDs equal but for their last byte, which numbers the leg (1, 2, ...). The call's
 * external id is that UUID with the last byte zeroed; the leg's speaker comes from the
 * operator's map of leg numbers (default 1 = caller, 2 = callee), else `leg<N>`.
 */
export function audioSocketLeg(
  uuid: string,
  speakers: ReadonlyMap<number, string>,
): { callExternalId: string; leg: number; speaker: string } {
  const bytes = uuidBytes(uuid);
  const leg = bytes[15]!;
  bytes[15] = 0;
  return { callExternalId: formatUuid(bytes), leg, speaker: speakers.get(leg) ?? `leg${leg}` };
}

export const DEFAULT_AUDIOSOCKET_SPEAKERS: ReadonlyMap<number, string> = new Map([
  [1, 'caller'],
  [2, 'callee'],
]);
