// readableText: a final's words as a reader expects them. Pure.
//
// Two steps over the recognizer's whitespace tokens:
// 1. inverse text normalization (src/text/inverse-normalization.ts): spoken numbers become
//    numerals, several tokens becoming one ("twenty five dollars" -> "$25");
// 2. sentence case: the first letter of the segment is upper case, and so is the letter after
//    a token ending in ".", "?" or "!" (recognizers here emit none, other engines may); the
//    pronoun "i" and its contractions ("i'm", "i'll", "i've", "i'd") are "I". Nothing else
//    changes case: there is no model of proper names here, so names stay as recognized.
//
// The result is a list of groups, one per output word, each naming the input tokens
// [from, to) it replaces, in order; every input token is in a group, and in two only when one
// spoken word gave digits to two groups of a card number ("double one" across groups). The
// word list is rewritten with the same groups, so `text` stays the words joined by single
// spaces (no word has a space in it), and a word made of several spans the first one's start
// to the last one's end.
import { inverseNormalize } from './inverse-normalization.js';

export interface ReadableGroup {
  from: number;
  to: number;
  text: string;
}

const PRONOUN_I = /^i(?:'(?:m|ll|ve|d))?$/i;

function upperFirst(token: string): string {
  const m = /\p{L}/u.exec(token);
  if (!m || m.index !== 0) return token;
  return token[0]!.toUpperCase() + token.slice(1);
}

/** The readable groups of `tokens` (see the header). */
export function readableGroups(tokens: readonly string[]): ReadableGroup[] {
  const groups: ReadableGroup[] = [];
  let i = 0;
  for (const r of inverseNormalize(tokens)) {
    for (; i < r.from; i++) groups.push({ from: i, to: i + 1, text: tokens[i]! });
    if (r.parts) groups.push(...r.parts.map((p) => ({ ...p })));
    else groups.push({ from: r.from, to: r.to, text: r.text });
    i = r.to;
  }
  for (; i < tokens.length; i++) groups.push({ from: i, to: i + 1, text: tokens[i]! });

  let sentenceStart = true;
  for (const g of groups) {
    if (PRONOUN_I.test(g.text)) g.text = `I${g.text.slice(1)}`;
    else if (sentenceStart) g.text = upperFirst(g.text);
    sentenceStart = /[.?!]$/.test(g.text);
  }
  return groups;
}

/** One word standing for several: the first word's fields, the last word's end, the text of
 * the group, and the lowest confidence (null when any word has none). */
export function mergeWords<W extends { word: string }>(words: readonly W[], text: string): W {
  const first = words[0]!;
  if (words.length === 1) return { ...first, word: text };
  const last = words[words.length - 1]!;
  const merged: Record<string, unknown> = { ...first, word: text };
  if ('endSample' in last) merged.endSample = (last as Record<string, unknown>).endSample;
  if ('confidence' in first) {
    const confidences = words.map((w) => (w as Record<string, unknown>).confidence);
    merged.confidence = confidences.every((c) => typeof c === 'number') ? Math.min(...(confidences as number[])) : null;
  }
  return merged as W;
}

export interface ReadableFinal<W> {
  text: string;
  words: W[];
  /** Groups over the whitespace tokens of the input text (for mapping offsets). */
  groups: ReadableGroup[];
}

function tokensOf(text: string): string[] {
  return text.split(/\s+/).filter((t) => t !== '');
}

/**
 * The readable form of one final. The word list is rewritten with the text's groups when its
 * words are the text's tokens (the usual case); otherwise (a recognizer whose word list differs
 * from its text) the word list is made readable on its own tokens by the same rules.
 */
export function readableFinal<W extends { word: string }>(text: string, words: readonly W[]): ReadableFinal<W> {
  const tokens = tokensOf(text);
  const groups = readableGroups(tokens);
  const wordTokens = words.map((w) => w.word);
  const same = wordTokens.length === tokens.length && wordTokens.every((t, k) => t === tokens[k]);
  const wordGroups = same ? groups : readableGroups(wordTokens);
  return {
    text: groups.map((g) => g.text).join(' '),
    words: words.length === 0 ? [] : wordGroups.map((g) => mergeWords(words.slice(g.from, g.to), g.text)),
    groups,
  };
}

/**
 * A character span [start, end) of `source` mapped into the readable text made from it with
 * `groups`. The span grows to whole groups where it touches a rewritten group; inside a token
 * kept as it was (case aside), offsets are kept exactly.
 */
export function mapSpan(source: string, groups: readonly ReadableGroup[], start: number, end: number): { start: number; end: number } {
  const tokenSpans = [...source.matchAll(/\S+/g)].map((m) => ({ start: m.index, end: m.index + m[0].length }));
  const groupStarts: number[] = [];
  let at = 0;
  for (const g of groups) {
    groupStarts.push(at);
    at += g.text.length + 1;
  }
  const tokenAt = (offset: number) => {
    const k = tokenSpans.findIndex((t) => offset < t.end);
    return k < 0 ? tokenSpans.length - 1 : k;
  };
  const inGroup = (token: number) => (g: ReadableGroup) => token >= g.from && token < g.to;
  const kept = (g: ReadableGroup, token: number) =>
    g.to - g.from === 1 && g.text.length === tokenSpans[token]!.end - tokenSpans[token]!.start;

  const t0 = tokenAt(start);
  const t1 = tokenAt(Math.max(start, end - 1));
  const g0 = groups.findIndex(inGroup(t0));
  const g1 = groups.findLastIndex(inGroup(t1));
  const first = groups[g0]!;
  const last = groups[g1]!;
  const outStart = groupStarts[g0]! + (kept(first, t0) ? Math.max(0, start - tokenSpans[t0]!.start) : 0);
  const outEnd = kept(last, t1)
    ? groupStarts[g1]! + Math.min(end - tokenSpans[t1]!.start, last.text.length)
    : groupStarts[g1]! + last.text.length;
  return { start: outStart, end: outEnd };
}
