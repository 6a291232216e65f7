// How long the desk's secrets live (docs/desk.md, "Sessions").

/** A login link's default life: long enough to paste into a browser, short enough that a link
 * left in a chat or a mailbox is dead by the time anyone else reads it. */
export const DEFAULT_LINK_TTL_MS = 15 * 60_000;
/** The longest a link may be given (`--ttl`). */
export const MAX_LINK_TTL_MS = 24 * 3_600_000;
/** A desk session ends after this long without a request ... */
export const SESSION_IDLE_MS = 8 * 3_600_000;
/** ... and this long after the login, whatever the activity. */
export const SESSION_ABSOLUTE_MS = 24 * 3_600_000;
/** last_seen_at is written at most this often per session, so reading is not a write each time. */
export const SESSION_TOUCH_AFTER_MS = 60_000;

/** The cookie's name. Not `__Host-`: that prefix needs Secure, and a desk on plain http (a
 * loopback or lab install) must work too; Path=/ and no Domain give the same scope. */
export const DESK_COOKIE = 'scribed_desk';
/** The header that carries the CSRF token on every desk request that changes state. */
export const DESK_CSRF_HEADER = 'x-scribed-desk-csrf';

export const DESK_PATH = '/desk/';
export const DESK_LOGIN_PATH = '/desk/login';

/** `--ttl` as `90s`, `15m` or `2h`: milliseconds, or an Error that says what is wrong. */
export function parseLinkTtl(value: string): number {
  const m = /^(\d{1,6})(s|m|h)$/.exec(value.trim());
  if (!m) throw new Error(`--ttl must be a number with s, m or h (90s, 15m, 2h), got ${value}`);
  const ms = Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
  if (ms < 10_000 || ms > MAX_LINK_TTL_MS) throw new Error(`--ttl must be between 10s and 24h, got ${value}`);
  return ms;
}
