// How deeply a JSON text nests, found by scanning it once without recursion. JSON.parse takes
// any depth, but JSON.stringify, deep equality and most walks of the parsed value recurse, so a
// body nested 100,000 deep parses fine and then overflows the stack wherever the value is
// echoed, hashed or stored (a 500 for what is a client's malformed request). Bodies are checked
// against MAX_JSON_DEPTH before they are parsed.
import { ScribedError } from './errors.js';

/** Deepest nesting of arrays and objects a request body may have; the deepest legal body of
 * any route nests a handful of levels (user group `properties` are the client's own JSON). */
export const MAX_JSON_DEPTH = 64;

/** Whether the arrays and objects of `text` nest deeper than `limit` (brackets inside strings
 * do not count). Works on any text: for invalid JSON the answer is about its brackets. */
export function jsonNestsDeeperThan(text: string, limit: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}

/** The refusal of a body (or a JSON form field) nested past MAX_JSON_DEPTH. */
export function tooDeep(field?: string): ScribedError {
  return new ScribedError(
    'BAD_REQUEST',
    `${field ? `${field}: ` : 'the body: '}JSON nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
  );
}
