// The `redact` option as stored with a session or job. Pure.
import { REDACTION_POLICIES, type RedactionPolicy } from '../../core/session-options.js';

/** The policies of stored options: rows written before the option existed have none, and an
 * unknown name (a later version's policy read by this one) is dropped, not guessed at. */
export function redactionPolicies(options: Readonly<Record<string, unknown>>): RedactionPolicy[] {
  const v = options.redact;
  if (!Array.isArray(v)) return [];
  return v.filter((p): p is RedactionPolicy => (REDACTION_POLICIES as readonly unknown[]).includes(p));
}
