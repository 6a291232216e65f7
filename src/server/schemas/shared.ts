// Shapes several resources' declarations share: times, ids, a call's leg fields, null.
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { SPEAKER_PATTERN } from '../../core/calls.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import { operation } from '../openapi/route-schema.js';

export const TIMESTAMP = Type.String({ description: 'ISO 8601 UTC time' });
export const DECIMAL = Type.String({ pattern: '^[0-9]+$', description: 'a 64-bit count as a decimal string' });
export const ANY_OBJECT = (description?: string) =>
  Type.Object({}, { additionalProperties: true, ...(description ? { description } : {}) });

/** `null` for "none", beside the value. */
export const nullable = <T extends TSchema>(t: T, options: Record<string, unknown> = {}) => Type.Union([t, Type.Null()], options);

/** The pattern of an id of one kind, as newId makes it (`<prefix>_<20 chars>`). */
export const idPattern = (prefix: string) => `^${prefix}_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`;
export const idOf = (prefix: string, description?: string) =>
  Type.String({ pattern: idPattern(prefix), ...(description ? { description } : {}) });

export const CALL_ID = idOf('call', 'a call id (POST .../stt/calls)');
export const SPEAKER = Type.String({
  pattern: SPEAKER_PATTERN.source,
  description: "the leg's speaker label: agent, customer, inbound, outbound, a PBX channel name",
});

/** callId and speaker on a session and a History row: null outside any call. */
export const LEG_FIELDS = { callId: nullable(CALL_ID), speaker: nullable(SPEAKER) };

/** An id in an answer: its kind's prefix. */
export const prefixed = (prefix: string, description?: string) =>
  Type.String({ pattern: `^${prefix}_`, ...(description ? { description } : {}) });

/** `null` beside the value in one schema, `type: [t, 'null']` (an enum gains null): the value's
 * own bounds stay at its top, where a client generating bodies from the document reads them. */
export function orNull<T extends TSchema>(t: T): TUnsafe<Static<T> | null> {
  const s = { ...t } as Record<string, unknown>;
  if (Array.isArray(s.enum)) s.enum = [...(s.enum as unknown[]), null];
  else if (typeof s.type === 'string') s.type = [s.type, 'null'];
  else return Type.Unsafe<Static<T> | null>({ anyOf: [t, { type: 'null' }] });
  return Type.Unsafe<Static<T> | null>(s);
}

/** The operation keys of an API facade's route (src/server/facades): its answers and errors are
 * in its imitated API's shape, stated by the route itself; `x-scribed-facade` tells the
 * document (openapi/swagger.ts) to add none of the native envelope's. */
export function facadeOperation(
  info: { operationId: string; tag: string; summary: string; description?: string },
  security: Record<string, string[]>[],
) {
  return { ...operation({ ...info, auth: 'none', errors: [] }), security, 'x-scribed-facade': true as const };
}

/** A facade's error answers: one body shape, one description a status. */
export const facadeErrors = (body: TSchema, statuses: Record<number, string>): Record<number, TSchema> =>
  Object.fromEntries(Object.entries(statuses).map(([s, description]) => [Number(s), { ...body, description }]));
