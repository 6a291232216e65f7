// AudioHook protocol version 2 messages (Genesys' public "AudioHook Monitor" protocol,
// docs/audiohook.md): the client's text messages parsed and checked field by field, and the
// server's built. Every message is `{version: "2", id, type, seq, parameters}`; the client's
// also carry `serverseq` (the last server seq it saw) and `position` (its stream position, an
// ISO-8601 duration), the server's `clientseq` (the last client seq it handled).
import { parseDuration } from './duration.js';

/** Largest text message taken (Genesys' reference server draws the line at 64 KiB too). */
export const MAX_TEXT_MESSAGE_CHARS = 65_535;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export type MediaChannel = 'external' | 'internal';
export const MEDIA_CHANNELS: readonly MediaChannel[] = ['external', 'internal'];

export interface MediaParameter {
  type: string;
  format: string;
  channels: MediaChannel[];
  rate: number;
}

export interface Participant {
  id: string;
  ani: string;
  aniName: string;
  dnis: string;
}

export interface ContinuedSession {
  id: string;
  serverseq: number;
  clientseq: number;
}

export interface OpenParameters {
  organizationId: string;
  conversationId: string;
  participant: Participant;
  media: MediaParameter[];
  language: string | null;
  continuedSessions: ContinuedSession[];
}

export type CloseReason = 'end' | 'error' | 'disconnect' | 'reconnect';

interface Base {
  id: string;
  seq: number;
  serverseq: number;
  /** The client's stream position, microseconds. */
  positionUs: number;
}

export type ClientMessage =
  | (Base & { type: 'open'; parameters: OpenParameters })
  | (Base & { type: 'close'; parameters: { reason: CloseReason } })
  | (Base & { type: 'ping'; parameters: { rttUs: number | null } })
  | (Base & { type: 'paused'; parameters: Record<string, never> })
  | (Base & { type: 'resumed'; parameters: { startUs: number; discardedUs: number } })
  | (Base & { type: 'discarded'; parameters: { startUs: number; discardedUs: number } })
  | (Base & { type: 'update'; parameters: { language: string | null } })
  | (Base & { type: 'error'; parameters: { code: number; message: string } });

export type ClientMessageType = ClientMessage['type'];

/** Why a client message was refused: `reason` for metrics (a bounded set), `info` for the
 * client (the `disconnect` message's text). */
export class AudiohookProtocolError extends Error {
  constructor(
    readonly reason:
      | 'too_large'
      | 'not_json'
      | 'malformed'
      | 'unknown_type'
      | 'bad_parameters'
      | 'seq'
      | 'serverseq'
      | 'session_id'
      | 'position'
      | 'state'
      | 'media'
      | 'audio',
    readonly info: string,
  ) {
    super(info);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const hasControl = (s: string): boolean => [...s].some((ch) => ch.charCodeAt(0) < 0x20);
const isShortString = (v: unknown, max = 256): v is string => typeof v === 'string' && v.length <= max && !hasControl(v);

function bad(type: string, field: string): never {
  throw new AudiohookProtocolError('bad_parameters', `Invalid '${type}' message: parameters.${field}`);
}

export function isUuid(v: unknown): v is string {
  return typeof v === 'string' && UUID.test(v);
}

function parseMedia(value: unknown): MediaParameter[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 16) bad('open', 'media');
  return value.map((m, i) => {
    if (
      !isObject(m) ||
      !isShortString(m.type, 32) ||
      !isShortString(m.format, 32) ||
      typeof m.rate !== 'number' ||
      !Array.isArray(m.channels)
    )
      bad('open', `media[${i}]`);
    const channels = m.channels as unknown[];
    if (
      channels.length === 0 ||
      channels.length > 2 ||
      !channels.every((c) => c === 'external' || c === 'internal') ||
      new Set(channels).size !== channels.length
    ) {
      bad('open', `media[${i}].channels`);
    }
    return { type: m.type as string, format: m.format as string, rate: m.rate, channels: channels as MediaChannel[] };
  });
}

function parseOpen(p: Record<string, unknown>): OpenParameters {
  if (!isUuid(p.organizationId)) bad('open', 'organizationId');
  if (!isUuid(p.conversationId)) bad('open', 'conversationId');
  const part = p.participant;
  if (!isObject(part)) bad('open', 'participant');
  const text = (k: string) => {
    const v = part[k];
    if (v === undefined || v === null) return '';
    if (!isShortString(v)) bad('open', `participant.${k}`);
    return v;
  };
  const participant: Participant = {
    id: typeof part.id === 'string' && isShortString(part.id) ? part.id : '',
    ani: text('ani'),
    aniName: text('aniName'),
    dnis: text('dnis'),
  };
  if (p.language !== undefined && p.language !== null && !isShortString(p.language, 35)) bad('open', 'language');
  const continued: ContinuedSession[] = [];
  if (p.continuedSessions !== undefined) {
    if (!Array.isArray(p.continuedSessions) || p.continuedSessions.length > 16) bad('open', 'continuedSessions');
    for (const [i, c] of (p.continuedSessions as unknown[]).entries()) {
      if (!isObject(c) || !isUuid(c.id) || !isSeq(c.serverseq) || !isSeq(c.clientseq)) bad('open', `continuedSessions[${i}]`);
      continued.push({ id: c.id as string, serverseq: c.serverseq as number, clientseq: c.clientseq as number });
    }
  }
  if (p.customConfig !== undefined && !isObject(p.customConfig)) bad('open', 'customConfig');
  return {
    organizationId: p.organizationId as string,
    conversationId: p.conversationId as string,
    participant,
    media: parseMedia(p.media),
    language: typeof p.language === 'string' ? p.language : null,
    continuedSessions: continued,
  };
}

function gap(type: 'resumed' | 'discarded', p: Record<string, unknown>): { startUs: number; discardedUs: number } {
  const startUs = parseDuration(p.start);
  const discardedUs = parseDuration(p.discarded);
  if (startUs === null) bad(type, 'start');
  if (discardedUs === null) bad(type, 'discarded');
  return { startUs, discardedUs };
}

/** One client text message, checked: its envelope and the parameters of its type. Throws
 * AudiohookProtocolError naming what is wrong. Sequencing is the session's (session.ts). */
export function parseClientMessage(text: string): ClientMessage {
  if (text.length > MAX_TEXT_MESSAGE_CHARS)
    throw new AudiohookProtocolError('too_large', `Text message too large (over ${MAX_TEXT_MESSAGE_CHARS} characters)`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new AudiohookProtocolError('not_json', 'Text message not valid JSON');
  }
  if (
    !isObject(raw) ||
    raw.version !== '2' ||
    !isUuid(raw.id) ||
    typeof raw.type !== 'string' ||
    !isSeq(raw.seq) ||
    raw.seq < 1 ||
    !isSeq(raw.serverseq) ||
    !isObject(raw.parameters)
  ) {
    throw new AudiohookProtocolError(
      'malformed',
      'Message not a well-formed client message (version "2", id, type, seq, serverseq, position, parameters)',
    );
  }
  const positionUs = parseDuration(raw.position);
  if (positionUs === null) throw new AudiohookProtocolError('malformed', 'Message not a well-formed client message: position');
  const base: Base = { id: raw.id, seq: raw.seq, serverseq: raw.serverseq, positionUs };
  const p = raw.parameters;
  switch (raw.type) {
    case 'open':
      return { ...base, type: 'open', parameters: parseOpen(p) };
    case 'close': {
      const reason = p.reason ?? 'end';
      if (reason !== 'end' && reason !== 'error' && reason !== 'disconnect' && reason !== 'reconnect') bad('close', 'reason');
      return { ...base, type: 'close', parameters: { reason } };
    }
    case 'ping': {
      const rttUs = p.rtt === undefined ? null : parseDuration(p.rtt);
      if (p.rtt !== undefined && rttUs === null) bad('ping', 'rtt');
      return { ...base, type: 'ping', parameters: { rttUs } };
    }
    case 'paused':
      return { ...base, type: 'paused', parameters: {} };
    case 'resumed':
      return { ...base, type: 'resumed', parameters: gap('resumed', p) };
    case 'discarded':
      return { ...base, type: 'discarded', parameters: gap('discarded', p) };
    case 'update':
      if (p.language !== undefined && !isShortString(p.language, 35)) bad('update', 'language');
      return { ...base, type: 'update', parameters: { language: typeof p.language === 'string' ? p.language : null } };
    case 'error': {
      if (typeof p.code !== 'number' || !Number.isInteger(p.code)) bad('error', 'code');
      const message = typeof p.message === 'string' ? p.message.slice(0, 1024) : '';
      return { ...base, type: 'error', parameters: { code: p.code, message } };
    }
    default:
      throw new AudiohookProtocolError('unknown_type', `Invalid Message: '${raw.type.slice(0, 32)}' is not a supported client message`);
  }
}

export type ServerMessageType = 'opened' | 'closed' | 'pong' | 'pause' | 'resume' | 'updated' | 'event' | 'disconnect' | 'reconnect';

export interface ServerMessage {
  version: '2';
  id: string;
  type: ServerMessageType;
  seq: number;
  clientseq: number;
  parameters: Record<string, unknown>;
}
