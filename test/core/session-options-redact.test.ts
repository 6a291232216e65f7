import { describe, expect, it } from 'vitest';
import { ScribedError } from '../../src/core/errors.js';
import { validateCreateSession } from '../../src/core/session-options.js';

const batch = { redactionApplied: true };

function refusal(fn: () => unknown): { field: unknown; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ScribedError);
    const e = err as ScribedError;
    expect(e.code).toBe('VALIDATION_FAILED');
    return { field: (e.details as { field?: unknown } | undefined)?.field, message: e.message };
  }
  throw new Error('not refused');
}

describe('options.redact', () => {
  it('is echoed in effectiveOptions where it is applied', () => {
    expect(validateCreateSession({ options: { redact: ['pci', 'numbers'] } }, batch).effectiveOptions.redact).toEqual(['pci', 'numbers']);
  });

  it('is not named when not requested (effectiveOptions as before the option existed)', () => {
    expect('redact' in validateCreateSession({ options: {} }, batch).effectiveOptions).toBe(false);
    expect('redact' in validateCreateSession({ options: { redact: [] } }, batch).effectiveOptions).toBe(false);
    expect('redact' in validateCreateSession({ options: { redact: null } }).effectiveOptions).toBe(false);
  });

  it('refuses unknown and duplicate policies, and non-arrays', () => {
    expect(refusal(() => validateCreateSession({ options: { redact: ['pii'] } }, batch)).field).toBe('options.redact[0]');
    expect(refusal(() => validateCreateSession({ options: { redact: ['pci', 'pci'] } }, batch)).field).toBe('options.redact[1]');
    expect(refusal(() => validateCreateSession({ options: { redact: 'pci' } }, batch)).field).toBe('options.redact');
  });

  it('is refused on a real-time session until partials and finals are redacted there', () => {
    const r = refusal(() => validateCreateSession({ options: { redact: ['pci'] } }));
    expect(r.field).toBe('options.redact');
    expect(r.message).toMatch(/batch transcription only/);
  });
});
