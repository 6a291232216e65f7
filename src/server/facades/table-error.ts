// What both facades' error helpers start from: any error a facade route meets (the table's
// ScribedError from the native code it calls, Fastify's own, a wait that passed its bound),
// as the table's code, the message without its code prefix, and the field it names.
import type { FastifyError } from 'fastify';
import { ScribedError, type ErrorCode } from '../../core/errors.js';
import { toTableError } from '../error-handler.js';
import { WaitBoundPassed } from './batch-wait.js';

export interface TableFault {
  code: ErrorCode | 'WAIT_BOUND_PASSED';
  status: number;
  /** The detail, without the `CODE: ` prefix the native envelope carries. */
  detail: string;
  /** The native field a validation error names (details.field), if any. */
  field: string | null;
}

export function tableFault(err: unknown): TableFault {
  if (err instanceof WaitBoundPassed) return { code: 'WAIT_BOUND_PASSED', status: 504, detail: err.message, field: null };
  const e = err instanceof ScribedError ? err : toTableError(err instanceof Error ? (err as FastifyError) : new Error(String(err)));
  const prefix = `${e.code}: `;
  const detail = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
  const field = typeof e.details?.field === 'string' ? e.details.field : null;
  return { code: e.code, status: e.spec.http, detail, field };
}
