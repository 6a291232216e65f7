// The error table and its documentation must agree, and errors that crossed a worker
// boundary (plain objects) must come back as the same code.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS, ScribedError, toScribedError } from '../../src/core/errors.js';
import { fail, ok, wsError } from '../../src/core/envelope.js';

const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/api.md'), 'utf8');

describe('error table', () => {
  it('documents every code with its wire code and HTTP status, and nothing stale', () => {
    const rows = [...doc.matchAll(/^\| `([A-Z_]+)` \| (-?\d+) \| (\d+) \|/gm)].map((m) => [m[1], Number(m[2]), Number(m[3])]);
    const table = Object.entries(ERRORS).map(([k, v]) => [k, v.wire, v.http]);
    expect(rows).toEqual(table);
  });

  it('uses only failure statuses', () => {
    for (const [code, spec] of Object.entries(ERRORS)) expect(spec.http, code).toBeGreaterThanOrEqual(400);
  });

  it('prefixes messages with the identifier', () => {
    expect(new ScribedError('NOT_FOUND', 'session x').message).toBe('NOT_FOUND: session x');
    expect(new ScribedError('NOT_FOUND').message).toBe(`NOT_FOUND: ${ERRORS.NOT_FOUND.summary}`);
  });

  it('rebuilds errors from their code after a structured clone', () => {
    const cloned = structuredClone({ code: 'ENGINE_BUSY', message: 'ENGINE_BUSY: all 4 in use' });
    const e = toScribedError(cloned);
    expect(e).toBeInstanceOf(ScribedError);
    expect(e.code).toBe('ENGINE_BUSY');
    expect(e.message).toBe('ENGINE_BUSY: all 4 in use');
    expect(toScribedError(new Error('boom')).code).toBe('INTERNAL');
  });
});

describe('envelope', () => {
  it('wraps success and failure in the spec shape', () => {
    expect(ok({ a: 1 })).toEqual({ code: 1, message: 'success', data: { a: 1 } });
    expect(fail(new ScribedError('IDEMPOTENCY_CONFLICT', 'changed title'))).toEqual({
      status: 409,
      body: { code: -1, message: 'IDEMPOTENCY_CONFLICT: changed title' },
    });
    expect(fail(new Error('secret detail')).body).toEqual({ code: -1, message: `INTERNAL: ${ERRORS.INTERNAL.summary}` });
    expect(wsError(new ScribedError('MALFORMED_FRAME', 'short'))).toEqual({
      type: 'error',
      code: 'MALFORMED_FRAME',
      message: 'MALFORMED_FRAME: short',
      fatal: false,
    });
  });
});
