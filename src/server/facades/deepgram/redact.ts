// Deepgram's `redact` parameter, on POST /v1/listen and the live GET /v1/listen alike, mapped
// onto the native `redact` policies (docs/compat.md, "Redaction"). Pure. Deepgram takes the
// parameter repeated (redact=pci&redact=numbers); a comma-separated list is read too. Its
// groups and entity names that a digit or address reader can honour are mapped (an entity
// to the policy that covers it, never to a narrower one); groups that need a named-entity
// model (pii, phi, names, places) are refused, never silently left unredacted.
import type { RedactionPolicy } from '../../../core/session-options.js';
import { all, bad, type Query } from './query.js';

const DEEPGRAM_REDACT: Readonly<Record<string, RedactionPolicy | null>> = {
  true: 'numbers',
  numbers: 'numbers',
  aggressive_numbers: 'numbers',
  false: null,
  pci: 'pci',
  credit_card: 'pci',
  credit_card_expiration: 'pci',
  cvv: 'pci',
  ssn: 'ssn',
  phone_number: 'phone',
  email_address: 'email',
};

/** The values scribed acts on, for the API document and docs/compat.md. */
export const DEEPGRAM_REDACT_VALUES = Object.keys(DEEPGRAM_REDACT);

/** The native policies a request's `redact` values ask for (none: []). */
export function redactPolicies(q: Query): RedactionPolicy[] {
  const out = new Set<RedactionPolicy>();
  for (const value of all(q, 'redact').flatMap((v) => v.split(','))) {
    const name = value.trim().toLowerCase();
    if (name === '') continue;
    if (!Object.hasOwn(DEEPGRAM_REDACT, name)) {
      bad(
        `redact: ${JSON.stringify(name)} is not served by scribed (no named-entity model runs here); use ${DEEPGRAM_REDACT_VALUES.join(', ')}`,
      );
    }
    const policy = DEEPGRAM_REDACT[name];
    if (policy) out.add(policy);
  }
  return [...out];
}
