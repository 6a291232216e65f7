// A Deepgram request's query as Fastify parses it (a repeated parameter becomes an array), the
// readers of its values, and the one refusal every parameter mapping throws. Pure; shared by
// the pre-recorded (options.ts), live (live-params.ts) and redaction (redact.ts) mappings.
import { DeepgramError } from './errors.js';

export type Query = Readonly<Record<string, string | string[] | undefined>>;

export function bad(message: string): never {
  throw new DeepgramError(400, 'INVALID_QUERY_PARAMETER', message);
}

export function all(q: Query, name: string): string[] {
  const v = q[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** A refused yes/no feature every value of which is `false`: it asks for nothing scribed
 * does not do, so it is accepted (parameters.ts, OFF_SWITCHES). */
export function switchedOff(q: Query, name: string, switches: ReadonlySet<string>): boolean {
  return switches.has(name) && all(q, name).every((v) => v.trim().toLowerCase() === 'false');
}

export function last(q: Query, name: string): string | undefined {
  const v = all(q, name);
  return v.length === 0 ? undefined : v[v.length - 1];
}
