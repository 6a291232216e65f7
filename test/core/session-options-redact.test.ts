import { describe, expect, it } from 'vitest';
import { ScribedError } from '../../src/core/errors.js';
import { validateCreateSession, withRedactionDefault } from '../../src/core/session-options.js';

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
    expect(validateCreateSession({ options: { redact: ['pci', 'numbers'] } }).effectiveOptions.redact).toEqual(['pci', 'numbers']);
  });

  it('is not named when not requested (effectiveOptions as before the option existed)', () => {
    expect('redact' in validateCreateSession({ options: {} }).effectiveOptions).toBe(false);
    expect('redact' in validateCreateSession({ options: { redact: [] } }).effectiveOptions).toBe(false);
    expect('redact' in validateCreateSession({ options: { redact: null } }).effectiveOptions).toBe(false);
  });

  it('refuses unknown and duplicate policies, and non-arrays', () => {
    expect(refusal(() => validateCreateSession({ options: { redact: ['pii'] } })).field).toBe('options.redact[0]');
    expect(refusal(() => validateCreateSession({ options: { redact: ['pci', 'pci'] } })).field).toBe('options.redact[1]');
    expect(refusal(() => validateCreateSession({ options: { redact: 'pci' } })).field).toBe('options.redact');
  });

  it('is accepted on a real-time session (the live path redacts partials and finals)', () => {
    expect(validateCreateSession({ options: { redact: ['numbers'] } }).effectiveOptions.redact).toEqual(['numbers']);
  });
});

describe('the account default (withRedactionDefault)', () => {
  const requested = (redact?: string[]) => validateCreateSession({ options: redact ? { redact } : {} }).effectiveOptions;

  it('applies to a request that asks for nothing, and a request adds to it but cannot remove any', () => {
    expect(withRedactionDefault(requested(), ['pci', 'numbers']).redact).toEqual(['pci', 'numbers']);
    expect(withRedactionDefault(requested(['email', 'pci']), ['pci', 'numbers']).redact).toEqual(['email', 'pci', 'numbers']);
  });

  it('without a default, options are left as they were (no redact key named)', () => {
    expect('redact' in withRedactionDefault(requested(), null)).toBe(false);
    expect('redact' in withRedactionDefault(requested(), [])).toBe(false);
    expect(withRedactionDefault(requested(['ssn']), undefined).redact).toEqual(['ssn']);
  });

  it('drops a name this version does not know', () => {
    expect(withRedactionDefault(requested(), ['pii', 'numbers']).redact).toEqual(['numbers']);
  });
});
