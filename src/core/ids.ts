// Object ids: `<prefix>_<20 chars>`. The 20 chars are 10 of a 48-bit millisecond timestamp
// and 10 of randomness (50 bits), both in Crockford base32 (lowercase), so ids compare in
// creation order as plain strings: History lists sort newest-first by id, and an index on
// id is also an index on time. Time is passed in; randomness comes from node:crypto.
import { randomBytes } from 'node:crypto';

export const ID_PREFIXES = [
  'acc',
  'rts',
  'stt',
  'tkt',
  'seg',
  'ip',
  'it',
  'ia',
  'mup',
  'mq',
  'req',
  'vc',
  'vd',
  'mug',
  'call',
  'aud',
  'whe',
  'msg',
  'rul',
  'alr',
  'cat',
] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** Crockford base32 in ascending ASCII order, so string order equals numeric order. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_CHARS = 10; // 10 * 5 = 50 bits >= 48
const RANDOM_CHARS = 10;
export const ID_BODY_CHARS = TIME_CHARS + RANDOM_CHARS;
const MAX_TIME_MS = 2 ** 48 - 1;

function encodeTime(ms: number): string {
  let out = '';
  let rest = ms;
  for (let i = 0; i < TIME_CHARS; i++) {
    out = ALPHABET[rest % 32]! + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < RANDOM_CHARS; i++) out += ALPHABET[bytes[i]! & 31]!;
  return out;
}

/** `random` is for tests (10 bytes, low 5 bits of each used); production passes nothing. */
export function newId(prefix: IdPrefix, now: Date | number, random: Uint8Array = randomBytes(RANDOM_CHARS)): string {
  const ms = typeof now === 'number' ? now : now.getTime();
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_TIME_MS) throw new RangeError(`time ${ms} is outside the 48-bit id range`);
  if (random.length < RANDOM_CHARS) throw new RangeError(`need ${RANDOM_CHARS} random bytes`);
  return `${prefix}_${encodeTime(ms)}${encodeRandom(random)}`;
}

const ID_PATTERN = new RegExp(`^(${ID_PREFIXES.join('|')})_[${ALPHABET}]{${ID_BODY_CHARS}}$`);

export function isId(value: unknown, prefix?: IdPrefix): value is string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) return false;
  return prefix === undefined || value.startsWith(`${prefix}_`);
}

/** The creation time encoded in an id (ms since the epoch), or null if it is not an id. */
export function idTime(id: string): number | null {
  if (!isId(id)) return null;
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 1 + TIME_CHARS);
  let ms = 0;
  for (const c of body) ms = ms * 32 + ALPHABET.indexOf(c);
  return ms;
}
