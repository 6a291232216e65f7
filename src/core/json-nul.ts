// U+0000 in a JSON body's strings. No text field of this API has a use for it, and PostgreSQL
// cannot store it in text (the shared store would fail the write with a 500 after validation
// passed), so a body whose strings hold it is refused before it is parsed, on either store.
import { ScribedError } from './errors.js';

/** Whether a string of `text` (JSON) holds the escape \u0000 (a raw NUL is not valid JSON
 * and fails parsing anyway). Escaped backslashes are skipped, so `"\\u0000"` (the six
 * characters) is not a NUL. */
export function jsonStringsHoldNul(text: string): boolean {
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!inString) {
      if (c === 0x22 /* " */) inString = true;
    } else if (c === 0x22) {
      inString = false;
    } else if (c === 0x5c /* \ */) {
      if (text.charCodeAt(i + 1) === 0x75 /* u */ && text.slice(i + 2, i + 6) === '0000') return true;
      i++;
    }
  }
  return false;
}

export function nulRefused(field?: string): ScribedError {
  return new ScribedError('BAD_REQUEST', `${field ? `${field}: ` : 'the body: '}strings must not contain U+0000 (NUL)`);
}
