// The JSON Schema (2020-12, OpenAPI 3.1's dialect) type the document is read as, and the small
// builders the hand-written operations still left (analytics.ts) are written with. Pure.
// Lengths in JSON Schema count Unicode code points, as the validators do.

export type JsonSchema = { [keyword: string]: unknown };

/** `null` means "not given" for the session options and most fields (the validators' rule). */
export function nullable(s: JsonSchema): JsonSchema {
  if (Array.isArray(s.enum)) return { ...s, enum: [...(s.enum as unknown[]), null] };
  if (typeof s.type === 'string') return { ...s, type: [s.type, 'null'] };
  return { anyOf: [s, { type: 'null' }] };
}

/** A string with at least one character that is not white space (the validators refuse a
 * value that trims to nothing). */
const NOT_BLANK = '\\S';

export function text(min: number, max: number, opts: { notBlank?: boolean; description?: string } = {}): JsonSchema {
  return {
    type: 'string',
    ...(min > 0 ? { minLength: min } : {}),
    maxLength: max,
    ...(opts.notBlank ? { pattern: NOT_BLANK } : {}),
    ...(opts.description ? { description: opts.description } : {}),
  };
}

export function object(
  properties: Record<string, JsonSchema>,
  required: readonly string[] = [],
  opts: { closed?: boolean; description?: string } = {},
): JsonSchema {
  return {
    type: 'object',
    ...(opts.description ? { description: opts.description } : {}),
    properties,
    ...(required.length > 0 ? { required: [...required] } : {}),
    ...(opts.closed ? { additionalProperties: false } : {}),
  };
}
