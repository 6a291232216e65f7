// Small builders for the JSON Schema (2020-12, OpenAPI 3.1's dialect) the API document is
// made of. Pure. Lengths in JSON Schema count Unicode code points, as the validators do.

export type JsonSchema = { [keyword: string]: unknown };

/** `null` means "not given" for the session options and most fields (the validators' rule). */
export function nullable(s: JsonSchema): JsonSchema {
  if (Array.isArray(s.enum)) return { ...s, enum: [...(s.enum as unknown[]), null] };
  if (typeof s.type === 'string') return { ...s, type: [s.type, 'null'] };
  return { anyOf: [s, { type: 'null' }] };
}

/** A string with at least one character that is not white space (the validators refuse a
 * value that trims to nothing). */
export const NOT_BLANK = '\\S';

export function text(min: number, max: number, opts: { notBlank?: boolean; description?: string } = {}): JsonSchema {
  return {
    type: 'string',
    ...(min > 0 ? { minLength: min } : {}),
    maxLength: max,
    ...(opts.notBlank ? { pattern: NOT_BLANK } : {}),
    ...(opts.description ? { description: opts.description } : {}),
  };
}

export function range(r: { min: number; max: number; integer: boolean }, description?: string): JsonSchema {
  return { type: r.integer ? 'integer' : 'number', minimum: r.min, maximum: r.max, ...(description ? { description } : {}) };
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

/** A pattern for a decimal string of at most max's digit count whose value is <= max, leading
 * zeros allowed: strings of the same length compare as numbers do, digit by digit. */
export function decimalAtMost(max: bigint): string {
  const digits = max.toString();
  const n = digits.length;
  const alternatives: string[] = [];
  if (n > 1) alternatives.push(`[0-9]{1,${n - 1}}`);
  for (let i = 0; i < n; i++) {
    const d = Number(digits[i]);
    if (d === 0) continue;
    const rest = n - 1 - i;
    alternatives.push(`${digits.slice(0, i)}[0-${d - 1}]${rest > 0 ? `[0-9]{${rest}}` : ''}`);
  }
  alternatives.push(digits);
  return `^(?:${alternatives.join('|')})$`;
}

/** A language tag (the shape of `subtags`, a pattern of its own) whose primary subtag is one
 * of `languages`, matched case-insensitively as src/core/recognizer-capabilities.ts does. */
export function primaryLanguagePattern(languages: readonly string[], subtags = '(?:-[A-Za-z0-9]{1,8})*'): string {
  const either = (c: string) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c);
  const alternatives = languages.map((l) => [...l].map(either).join(''));
  return `^(?:${alternatives.join('|')})${subtags}$`;
}
