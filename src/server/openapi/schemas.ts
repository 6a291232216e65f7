// What the served document (GET /openapi.json) adds from the serving node's facts: a language
// tag marked `recognizerLanguages()` in a route's schema is narrowed there to the primary
// subtags the node's models recognize (swagger.ts); the rendered reference, made without a
// node, keeps the tag's shape. The handler checks the rule itself (src/core/session-options.ts).
import type { DocumentOptions } from './document-types.js';

/** LANGUAGE_TAG (src/core/session-options.ts) after its primary subtag
 * (test/server/openapi.test.ts checks it is). */
export const LANGUAGE_SUBTAGS = '(?:-[A-Za-z0-9]{1,8})*';

/** On a language tag's schema: narrowed to the serving node's recognizer languages. */
export const recognizerLanguages = (): { 'x-recognizer-languages': true } => ({ 'x-recognizer-languages': true });

/** A language tag whose primary subtag is one of `languages`, matched case-insensitively as
 * src/core/recognizer-capabilities.ts does. */
export function primaryLanguagePattern(languages: readonly string[], subtags = LANGUAGE_SUBTAGS): string {
  const either = (c: string) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c);
  const alternatives = languages.map((l) => [...l].map(either).join(''));
  return `^(?:${alternatives.join('|')})${subtags}$`;
}

/** A schema with the node's facts applied (its marks removed), at any depth. */
export function withNodeFacts(schema: Record<string, unknown>, facts: DocumentOptions): Record<string, unknown> {
  const { 'x-recognizer-languages': mark, ...rest } = schema;
  if (mark && facts.recognizerLanguages) return { ...rest, pattern: primaryLanguagePattern(facts.recognizerLanguages) };
  return rest;
}
