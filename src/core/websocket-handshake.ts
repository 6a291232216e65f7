// The form of a WebSocket upgrade request (RFC 6455, section 4.2.1), checked before anything
// else looks at the request: a malformed upgrade is refused in the envelope before it is
// authenticated, before a ticket is spent and before a session is claimed. These are the checks
// `ws` makes in handleUpgrade (which would otherwise answer in its own text/html shape, after
// the claim), so a request that passes here is one `ws` upgrades.
import { ScribedError } from './errors.js';

/** Versions `ws` speaks; named in the Sec-WebSocket-Version header of a refusal. */
export const WEBSOCKET_VERSIONS = [13, 8] as const;
/** 16 random bytes, base64: 22 characters and `==`. */
const KEY = /^[+/0-9A-Za-z]{22}==$/;
/** An HTTP token (RFC 9110, tchar). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

type Headers = Record<string, string | string[] | undefined>;

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

export interface UpgradeRefusal {
  error: ScribedError;
  /** Headers the refusal carries: a client with the wrong version learns the right ones. */
  headers: Record<string, string>;
}

/** Why this upgrade request is malformed, or null when `ws` will take it. */
export function upgradeProblem(method: string, headers: Headers): UpgradeRefusal | null {
  const bad = (detail: string, extra: Record<string, string> = {}) => ({
    error: new ScribedError('UPGRADE_INVALID', detail),
    headers: extra,
  });
  if (method !== 'GET') return bad(`a WebSocket upgrade is a GET, not ${method}`);
  if (one(headers.upgrade)?.toLowerCase() !== 'websocket') return bad('the Upgrade header must be websocket');
  const version = Number(one(headers['sec-websocket-version']));
  if (!(WEBSOCKET_VERSIONS as readonly number[]).includes(version)) {
    return bad(`Sec-WebSocket-Version must be one of ${WEBSOCKET_VERSIONS.join(', ')}`, {
      'sec-websocket-version': WEBSOCKET_VERSIONS.join(', '),
    });
  }
  if (!KEY.test(one(headers['sec-websocket-key']) ?? '')) return bad('Sec-WebSocket-Key must be 16 bytes in base64');
  const protocols = one(headers['sec-websocket-protocol']);
  if (protocols !== undefined) {
    const names = protocols.split(',').map((p) => p.trim());
    if (names.some((p) => !TOKEN.test(p)) || new Set(names).size !== names.length) {
      return bad('Sec-WebSocket-Protocol must be a comma-separated list of distinct tokens');
    }
  }
  return null;
}
