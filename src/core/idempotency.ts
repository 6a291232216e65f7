// The Idempotency-Key header format, one rule for every endpoint that takes one (session
// creation, interpretation retry, batch upload): 16 to 64 printable ASCII characters, space
// (0x20) to `~` (0x7E), as the spec fixes it for retries. Pure.
import { ScribedError } from './errors.js';

export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{16,64}$/;

/** The key from a header value; missing or malformed fails with IDEMPOTENCY_KEY_REQUIRED. */
export function requireIdempotencyKey(value: string | undefined): string {
  if (value === undefined || !IDEMPOTENCY_KEY.test(value)) {
    throw new ScribedError('IDEMPOTENCY_KEY_REQUIRED', 'Idempotency-Key must be 16 to 64 printable ASCII characters');
  }
  return value;
}

/** For endpoints where the key is optional: undefined when absent, malformed still fails. */
export function optionalIdempotencyKey(value: string | undefined): string | undefined {
  return value === undefined ? undefined : requireIdempotencyKey(value);
}
