// Temporary streaming tokens (GET /v3/token; the SDK's `streaming.createTemporaryToken`), which
// a browser puts in the socket's URL (`?token=`) instead of the key. Unlike the native browser
// tickets, which name a session created beforehand (the tickets table binds each to one), a
// token comes before its session exists, and the token request and the socket are balanced to
// any node (the API and live backends of deploy/haproxy.cfg). So a token is self-contained
// and signed: `<payload>.<mac>`, the payload (token id, account, expiry, longest session)
// authenticated with HMAC-SHA256 under a server key every node of a store holds
// (src/store/server-key.ts), checked in constant time. Nothing secret is stored: a stolen
// database yields no token. Single use is the store's: the session a token opens is created
// with the token's id as its idempotency key, so a second socket with the same token, on any
// node, finds it used (docs/compat.md, "Temporary tokens"). The request logger never writes a
// `token` query value (src/core/redact.ts).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const TOKEN_KEY_NAME = 'assemblyai-streaming-token';
/** AssemblyAI's bounds: a token lives 1 to 600 s; a session 60 s to 3 h (the default). */
export const TOKEN_TTL_RANGE = { min: 1, max: 600 } as const;
export const SESSION_SECONDS_RANGE = { min: 60, max: 10_800 } as const;
export const DEFAULT_MAX_SESSION_SECONDS = 10_800;
/** Longer tokens are refused before any parsing or hashing. */
const MAX_TOKEN_CHARS = 1024;
const CONTEXT = 'scribed assemblyai streaming token v1\n';

export interface TokenClaims {
  /** The token's id: the idempotency key of the session it opens. */
  id: string;
  accountId: string;
  /** Unix seconds after which the token opens nothing. */
  expiresAt: number;
  maxSessionSeconds: number;
}

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(CONTEXT).update(payload).digest();
}

export function issueToken(key: Buffer, accountId: string, ttlSeconds: number, maxSessionSeconds: number, now: Date): string {
  const claims: TokenClaims = {
    id: randomBytes(16).toString('hex'),
    accountId,
    expiresAt: Math.floor(now.getTime() / 1000) + ttlSeconds,
    maxSessionSeconds,
  };
  const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
  return `${payload}.${mac(key, payload).toString('base64url')}`;
}

export type TokenCheck = { ok: true; claims: TokenClaims } | { ok: false; reason: 'invalid' | 'expired' };

/** The claims of a token this store's nodes issued and that has not expired. */
export function verifyToken(key: Buffer, token: string, now: Date): TokenCheck {
  if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'invalid' };
  const dot = token.indexOf('.');
  if (dot <= 0 || dot !== token.lastIndexOf('.')) return { ok: false, reason: 'invalid' };
  const payload = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = mac(key, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'invalid' };
  let claims: TokenClaims;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as TokenClaims;
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (
    typeof claims.id !== 'string' ||
    typeof claims.accountId !== 'string' ||
    typeof claims.expiresAt !== 'number' ||
    typeof claims.maxSessionSeconds !== 'number'
  )
    return { ok: false, reason: 'invalid' };
  if (now.getTime() / 1000 >= claims.expiresAt) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}
