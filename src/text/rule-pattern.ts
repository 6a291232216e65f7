// Regular expressions of live rules (docs/rules.md) on RE2 (the re2-wasm package, Google's RE2
// built for WebAssembly): an automaton, never backtracking, so a match takes time linear in the
// text whatever the pattern ((a+)+$ included) and a rule cannot hang the server. RE2 has no
// backreferences or lookaround: such patterns are refused when the rule is written.
import { createRequire } from 'node:module';
import type { TextSpan } from '../core/rules-match.js';

interface Re2 {
  exec(input: string): (string[] & { index: number }) | null;
}
type Re2Class = new (pattern: string, flags?: string) => Re2;

// A CommonJS package; loaded through require so its WebAssembly starts once, synchronously.
const { RE2 } = createRequire(import.meta.url)('re2-wasm') as { RE2: Re2Class };

/** Compiled patterns by flags and source; bounded (50 rules an account), cleared when full. */
const compiled = new Map<string, Re2>();
const MAX_COMPILED = 2000;

function compile(pattern: string, caseSensitive: boolean): Re2 {
  const key = `${caseSensitive ? 'u' : 'iu'}/${pattern}`;
  let re = compiled.get(key);
  if (!re) {
    // u: RE2 in this package requires it (the text is matched as Unicode code points).
    re = new RE2(pattern, caseSensitive ? 'u' : 'iu');
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(key, re);
  }
  return re;
}

/** Null when RE2 takes the pattern, else RE2's reason. */
export function checkRulePattern(pattern: string, caseSensitive: boolean): string | null {
  try {
    compile(pattern, caseSensitive);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** The first match of the pattern in the text (an empty match counts as none). */
export function findRulePattern(pattern: string, caseSensitive: boolean, text: string): TextSpan | null {
  const m = compile(pattern, caseSensitive).exec(text);
  if (!m || m[0]!.length === 0) return null;
  return { start: m.index, end: m.index + m[0]!.length };
}
