// A request refused by its route's schema (Fastify validates with Ajv before the handler runs)
// answered from the one error table, in the words the schema gives: each schema a client can
// break names its message (`x-invalid`, openapi/route-schema.ts), and the answer is
// `<field>: <message>` with the field written as the API names it (`phrases[1]`,
// `options.languageHint`, or the name the schema gives, `x-field`); an unknown key is
// `<key>: unknown field` unless its object names another message (`x-unknown`, one message or
// one per key). Ajv stops at the first failure (allErrors off), so the cost
// of a valid request is the compiled check alone.
import type { FastifyError, FastifySchema } from 'fastify';
import { ScribedError, type ErrorCode } from '../core/errors.js';

type Schema = Record<string, unknown>;

/** A schema's message for a failed keyword: `x-invalid` is one message, or one per keyword
 * with `default` for the rest. */
function messageOf(schema: Schema | undefined, keyword: string): string | null {
  const m = schema?.['x-invalid'];
  if (typeof m === 'string') return m;
  if (m && typeof m === 'object') {
    const byKeyword = m as Record<string, unknown>;
    const found = byKeyword[keyword] ?? byKeyword.default;
    if (typeof found === 'string') return found;
  }
  return null;
}

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  /** With Ajv's `verbose`: the schema holding the keyword that failed. */
  parentSchema?: Schema;
}

/** `/options/vocabularyHints/2` as the API names it: `options.vocabularyHints[2]`. */
export function fieldName(instancePath: string, root: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (parts.length === 0) return root;
  return parts.reduce((out, p, i) => (/^\d+$/.test(p) ? `${out}[${p}]` : i === 0 ? p : `${out}.${p}`), '');
}

const join = (parent: string, key: string) => (parent === '' ? key : `${parent}.${key}`);

/** The field a schema's refusal names: its path, or the name the schema gives (`x-field`: the
 * list's name for any of its items), or none (`x-field: false`, the message stands alone). */
function named(schema: Schema | undefined, path: string): string {
  const f = schema?.['x-field'];
  if (f === false) return '';
  return typeof f === 'string' ? f : path;
}

/** The field and message of one Ajv failure, or null when no schema on its path names one. */
function described(e: AjvError, root: string): { field: string; message: string } | null {
  const parent = e.parentSchema ?? {};
  const at = e.instancePath === '' ? '' : fieldName(e.instancePath, root);
  if (e.keyword === 'required') {
    const key = String(e.params.missingProperty);
    const prop = (parent.properties as Record<string, Schema> | undefined)?.[key];
    const message = messageOf(prop, 'required');
    return message !== null ? { field: named(prop, join(at, key)), message } : null;
  }
  if (e.keyword === 'additionalProperties') {
    const key = String(e.params.additionalProperty);
    const unknown = parent['x-unknown'];
    const byKey = unknown && typeof unknown === 'object' ? (unknown as Record<string, unknown>) : {};
    const message =
      typeof unknown === 'string'
        ? unknown
        : typeof byKey[key] === 'string'
          ? (byKey[key] as string)
          : typeof byKey.default === 'string'
            ? (byKey.default as string)
            : 'unknown field';
    return { field: join(at, key), message };
  }
  const message = messageOf(parent, e.keyword);
  return message !== null ? { field: named(parent, at === '' ? root : at), message } : null;
}

/** The table's answer for a Fastify validation error, or null if `err` is not one. */
export function validationFailure(err: FastifyError | Error, schema: FastifySchema | undefined): ScribedError | null {
  const errors = (err as FastifyError).validation as AjvError[] | undefined;
  if (!errors || errors.length === 0) return null;
  const context = (err as FastifyError).validationContext ?? 'body';
  const code = ((schema as Schema | undefined)?.['x-scribed-validation-error'] as ErrorCode | undefined) ?? 'VALIDATION_FAILED';
  const root = context === 'querystring' ? 'query' : context;
  // A union's branches fail before the union itself: the first failure whose schema names a
  // message (the union's) is the one answered.
  for (const e of errors) {
    const d = described(e, root);
    if (d)
      return new ScribedError(code, d.field === '' ? d.message : `${d.field}: ${d.message}`, {
        cause: err,
        ...(d.field === '' ? {} : { details: { field: d.field } }),
      });
  }
  const first = errors[0]!;
  const field = first.instancePath === '' ? root : fieldName(first.instancePath, root);
  return new ScribedError(code, `${field}: ${first.message ?? 'invalid'}`, { cause: err, details: { field } });
}
