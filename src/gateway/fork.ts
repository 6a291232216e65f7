// FreeSWITCH mod_audio_fork and jambonz `listen`: a WebSocket whose first text frame is JSON
// metadata, followed by binary frames of L16 (16-bit signed little-endian PCM; FreeSWITCH's
// native byte order on x86/ARM) at the announced rate, mono, mixed (both parties summed in one
// channel) or stereo (two interleaved channels: the caller first, the callee second).
// jambonz puts `sampleRate` and `mixType` into that frame itself; mod_audio_fork sends the
// metadata its `uuid_audio_fork ... start` command was given, so the rate and mix come from
// that metadata or, failing that, from the URL's query (`/fork?sampleRate=16000&mixType=stereo`).
// Pure: parsing and de-interleaving, no I/O. docs/gateway.md.
import { AGENT_ID_RULE, isAgentId } from '../core/calls.js';
import { SPEAKER_PATTERN } from './twilio.js';

export type ForkInvalidReason =
  'not_json' | 'bad_field' | 'unsupported_rate' | 'bad_speaker' | 'text_after_metadata' | 'audio_before_metadata';

export type MixType = 'mono' | 'mixed' | 'stereo';

/** Rates a session takes as 16-bit PCM (src/core/audio/encodings.ts). */
export const FORK_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;

export interface ForkMetadata {
  sampleRate: (typeof FORK_RATES)[number];
  mixType: MixType;
  channels: 1 | 2;
  /** The PBX's id of the call (jambonz callSid, FreeSWITCH uuid), or null if it sent none. */
  callId: string | null;
  /** One speaker per channel. */
  speakers: string[];
  /** The call's agent (`agentId`), when the PBX's metadata names one: the call's agentId. */
  agentId?: string;
}

export type ForkParse = { ok: true; metadata: ForkMetadata } | { ok: false; reason: ForkInvalidReason; detail: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const CALL_ID_PATTERN = /^[A-Za-z0-9_.:@-]{1,128}$/;

/** A field from the top level, or from a nested `metadata` object (jambonz's `listen`
 * metadata property, or an application that nests its own). */
function field(meta: Record<string, unknown>, name: string): unknown {
  if (meta[name] !== undefined) return meta[name];
  return isObject(meta.metadata) ? meta.metadata[name] : undefined;
}

/** `8k`, `16k` (mod_audio_fork's spelling) or a number of Hz. */
function rateOf(v: unknown): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string') {
    const k = /^(\d{1,3})k$/i.exec(v);
    if (k) return Number(k[1]) * 1000;
    if (/^\d{4,6}$/.test(v)) return Number(v);
  }
  return null;
}

/** The metadata text frame, with the URL's query as the fallback for rate and mix. */
export function parseForkMetadata(text: string, query: URLSearchParams = new URLSearchParams()): ForkParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not_json', detail: 'the metadata frame is not JSON' };
  }
  if (!isObject(value)) return { ok: false, reason: 'bad_field', detail: 'the metadata is not a JSON object' };
  const rawRate = field(value, 'sampleRate') ?? query.get('sampleRate') ?? undefined;
  if (rawRate === undefined) return { ok: false, reason: 'bad_field', detail: 'no sampleRate in the metadata or the URL' };
  const rate = rateOf(rawRate);
  if (rate === null || !(FORK_RATES as readonly number[]).includes(rate)) {
    return { ok: false, reason: 'unsupported_rate', detail: `sampleRate ${String(rawRate).slice(0, 16)}: one of ${FORK_RATES.join(', ')}` };
  }
  const mix = field(value, 'mixType') ?? query.get('mixType') ?? 'mono';
  if (mix !== 'mono' && mix !== 'mixed' && mix !== 'stereo')
    return { ok: false, reason: 'bad_field', detail: 'mixType must be mono, mixed or stereo' };
  const rawCall = field(value, 'callSid') ?? field(value, 'call_sid') ?? field(value, 'uuid') ?? field(value, 'callId') ?? null;
  if (rawCall !== null && (typeof rawCall !== 'string' || !CALL_ID_PATTERN.test(rawCall)))
    return { ok: false, reason: 'bad_field', detail: 'callSid/uuid must be 1-128 of [A-Za-z0-9_.:@-]' };
  const caller = field(value, 'callerSpeaker') ?? 'caller';
  const callee = field(value, 'calleeSpeaker') ?? 'callee';
  const mixed = field(value, 'mixedSpeaker') ?? 'mixed';
  const speakers = mix === 'stereo' ? [caller, callee] : mix === 'mixed' ? [mixed] : [caller];
  if (!speakers.every((s) => typeof s === 'string' && SPEAKER_PATTERN.test(s)))
    return { ok: false, reason: 'bad_speaker', detail: `speaker names must match ${SPEAKER_PATTERN.source}` };
  if (new Set(speakers).size !== speakers.length)
    return { ok: false, reason: 'bad_speaker', detail: 'callerSpeaker and calleeSpeaker must differ' };
  const agentId = field(value, 'agentId');
  if (agentId !== undefined && !isAgentId(agentId)) return { ok: false, reason: 'bad_field', detail: AGENT_ID_RULE };
  return {
    ok: true,
    metadata: {
      sampleRate: rate as ForkMetadata['sampleRate'],
      mixType: mix,
      channels: mix === 'stereo' ? 2 : 1,
      callId: rawCall,
      speakers: speakers as string[],
      ...(agentId === undefined ? {} : { agentId }),
    },
  };
}

/**
 * Splits binary frames into one s16le buffer per channel. A frame may end inside a sample or
 * (stereo) between the two channels of one instant: the rest is carried into the next frame,
 * so no sample is shifted onto the wrong channel.
 */
export class ForkDemux {
  private carry: Buffer = Buffer.alloc(0);
  private readonly frameBytes: number;
  /** Bytes received (carry included once it is used). */
  receivedBytes = 0;

  constructor(readonly channels: 1 | 2) {
    this.frameBytes = 2 * channels;
  }

  /** Per-channel PCM of the whole instants in `data` (with what was carried). */
  push(data: Buffer): Buffer[] {
    this.receivedBytes += data.length;
    const all = this.carry.length > 0 ? Buffer.concat([this.carry, data]) : data;
    const whole = all.length - (all.length % this.frameBytes);
    this.carry = Buffer.from(all.subarray(whole));
    if (this.channels === 1) return [all.subarray(0, whole)];
    const instants = whole / this.frameBytes;
    const left = Buffer.allocUnsafe(instants * 2);
    const right = Buffer.allocUnsafe(instants * 2);
    for (let i = 0; i < instants; i++) {
      left.writeInt16LE(all.readInt16LE(i * 4), i * 2);
      right.writeInt16LE(all.readInt16LE(i * 4 + 2), i * 2);
    }
    return [left, right];
  }

  /** Bytes left over at the end of the stream (an incomplete instant): dropped and reported. */
  get pendingBytes(): number {
    return this.carry.length;
  }
}
