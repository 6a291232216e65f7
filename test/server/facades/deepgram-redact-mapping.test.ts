// Deepgram's `redact` parameter on both /v1/listen routes (src/server/facades/deepgram/redact.ts):
// its number and PCI groups and the entities a digit or address reader honours map onto native
// policies the native validation accepts; groups needing a named-entity model are refused.
import { describe, expect, it } from 'vitest';
import { DeepgramError } from '../../../src/server/facades/deepgram/errors.js';
import { mapLiveQuery } from '../../../src/server/facades/deepgram/live-params.js';
import { mapListenQuery } from '../../../src/server/facades/deepgram/options.js';
import { validateCreateSession } from '../../../src/core/session-options.js';

const live = (redact: string | string[]) => mapLiveQuery({ encoding: 'mulaw', sample_rate: '8000', redact }).sessionBody.options.redact;
const prerecorded = (redact: string | string[]) => JSON.parse(mapListenQuery({ redact }).nativeFields.options!).redact;

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DeepgramError);
    return (err as Error).message;
  }
  throw new Error('not refused');
}

describe('Deepgram redact=', () => {
  it('maps numbers, true and aggressive_numbers to numbers; pci and its entities to pci; ssn, phone_number, email_address', () => {
    for (const map of [live, prerecorded]) {
      expect(map('numbers')).toEqual(['numbers']);
      expect(map('true')).toEqual(['numbers']);
      expect(map('aggressive_numbers')).toEqual(['numbers']);
      expect(map(['pci', 'numbers'])).toEqual(['pci', 'numbers']);
      expect(map('pci,ssn')).toEqual(['pci', 'ssn']);
      expect(map(['credit_card', 'cvv', 'credit_card_expiration'])).toEqual(['pci']);
      expect(map(['phone_number', 'email_address'])).toEqual(['phone', 'email']);
      expect(map('false')).toBeUndefined();
    }
  });

  it('gives a session body the native validation accepts, echoing redact', () => {
    const body = mapLiveQuery({ encoding: 'linear16', sample_rate: '16000', redact: ['pci', 'numbers'] }).sessionBody;
    expect(validateCreateSession(body).effectiveOptions.redact).toEqual(['pci', 'numbers']);
  });

  it('refuses pii, phi and entities no model here detects, naming the value', () => {
    expect(refusal(() => live('pii'))).toMatch(/^redact: "pii" is not served/);
    expect(refusal(() => prerecorded(['pci', 'phi']))).toMatch(/^redact: "phi" is not served/);
    expect(refusal(() => prerecorded('name'))).toMatch(/^redact: "name"/);
  });
});
