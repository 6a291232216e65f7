// Signed callbacks. Each delivery carries
//   X-Scribed-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
// The timestamp is inside the signed text, so a receiver can refuse old replays; the secret
// is per design (returned once as `callbackSecret` when the design is created) and is
// derived from a server key, so it is never stored. Retry delays double from a base.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-scribed-signature';

export function callbackSecret(serverKey: Buffer, designId: string): string {
  return `cbs_${createHmac('sha256', serverKey).update(`voice-design-callback:${designId}`).digest('base64url')}`;
}

export function signCallback(secret: string, unixSeconds: number, body: string): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/** What a receiver does: recompute and compare in constant time; refuse stale timestamps. */
export function verifyCallback(secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const t = Number(m[1]);
  if (Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(signCallback(secret, t, body).slice(`t=${t},v1=`.length), 'hex');
  return timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'));
}

/** Delay before attempt `n` (n >= 2): base * 2^(n-2). */
export function retryDelayMs(baseMs: number, nextAttempt: number): number {
  return baseMs * 2 ** Math.max(0, nextAttempt - 2);
}
