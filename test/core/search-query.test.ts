// The search query (src/core/search-query.ts): web-search syntax parsed into words, rebuilt
// for FTS5 and for PostgreSQL with no request text left as syntax; highlight runs; the cursor
// and the request's filters and limits.
import { describe, expect, it } from 'vitest';
import { ScribedError } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import {
  MATCH_CLOSE,
  MATCH_OPEN,
  decodeSearchCursor,
  encodeSearchCursor,
  highlightParts,
  parseSearchQuery,
  parseSearchRequest,
  toFts5Match,
  toPostgresTsquery,
} from '../../src/core/search-query.js';

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ScribedError);
    expect((e as ScribedError).code).toBe('VALIDATION_FAILED');
    return (e as ScribedError).message;
  }
  throw new Error('not refused');
}

describe('parseSearchQuery', () => {
  it('reads words, quoted phrases, OR and -exclusions', () => {
    expect(parseSearchQuery('Cancel  subscription')).toEqual({ all: [[['cancel']], [['subscription']]], none: [] });
    expect(parseSearchQuery('"cancel my subscription" today')).toEqual({
      all: [[['cancel', 'my', 'subscription']], [['today']]],
      none: [],
    });
    expect(parseSearchQuery('invoice OR payment late')).toEqual({ all: [[['invoice'], ['payment']], [['late']]], none: [] });
    expect(parseSearchQuery('cancel -subscription -"my plan"')).toEqual({ all: [[['cancel']]], none: [['subscription'], ['my', 'plan']] });
    // A lower-case or is a word; a dangling OR is nothing.
    expect(parseSearchQuery('this or that OR')).toEqual({ all: [[['this']], [['or']], [['that']]], none: [] });
    // An unclosed quote runs to the end.
    expect(parseSearchQuery('"cancel my')).toEqual({ all: [[['cancel', 'my']]], none: [] });
  });

  it('keeps letters and digits of any script only: punctuation and engine operators are spaces', () => {
    expect(parseSearchQuery('well-known café 42')).toEqual({ all: [[['well', 'known']], [['café']], [['42']]], none: [] });
    expect(parseSearchQuery('NEAR(a b) c* d:e ^f')).toEqual({ all: [[['near', 'a']], [['b']], [['c']], [['d', 'e']], [['f']]], none: [] });
    expect(parseSearchQuery('"a" "b')).toEqual({ all: [[['a']], [['b']]], none: [] });
  });

  it('refuses empty, too long, too many terms, exclusions only and an excluded alternative', () => {
    expect(refusal(() => parseSearchQuery(undefined))).toMatch(/q: a search query is required/);
    expect(refusal(() => parseSearchQuery('  '))).toMatch(/q:/);
    expect(refusal(() => parseSearchQuery('!!! ---'))).toMatch(/no word/);
    expect(refusal(() => parseSearchQuery('x'.repeat(257)))).toMatch(/at most 256/);
    expect(refusal(() => parseSearchQuery(Array.from({ length: 17 }, (_, i) => `w${i}`).join(' ')))).toMatch(/at most 16/);
    expect(refusal(() => parseSearchQuery('-cancel'))).toMatch(/only exclusions/);
    expect(refusal(() => parseSearchQuery('a OR -b'))).toMatch(/OR alternative/);
  });
});

describe('the engines’ queries', () => {
  it('FTS5: every word inside quotes, grouped by the parse', () => {
    expect(toFts5Match(parseSearchQuery('"cancel my subscription" invoice OR payment -late -"too bad"'))).toBe(
      '("cancel my subscription" AND ("invoice" OR "payment")) NOT ("late" OR "too bad")',
    );
    // Whatever the request holds, only letters, digits, spaces and the builder's own syntax remain.
    const hostile = toFts5Match(parseSearchQuery('a" OR x:* NEAR("b") {c} -d\' ; DROP'));
    expect(hostile.replace(/"[\p{L}\p{N} ]+"/gu, 'W')).toMatch(/^[W ()ANDORNOT]+$/);
  });

  it('PostgreSQL: one websearch_to_tsquery per phrase, bound, combined with tsquery operators', () => {
    expect(toPostgresTsquery(parseSearchQuery('help OR hello -morning'))).toEqual({
      sql: "((websearch_to_tsquery('simple', ?) || websearch_to_tsquery('simple', ?))) && !!(websearch_to_tsquery('simple', ?))",
      params: ['"help"', '"hello"', '"morning"'],
    });
  });
});

describe('highlightParts', () => {
  it('cuts marked text into runs, joining matches parted only by spaces', () => {
    const m = (s: string) => `${MATCH_OPEN}${s}${MATCH_CLOSE}`;
    expect(highlightParts(`I want to ${m('cancel')} ${m('my')} ${m('subscription')} please`)).toEqual([
      { text: 'I want to ', match: false },
      { text: 'cancel my subscription', match: true },
      { text: ' please', match: false },
    ]);
    expect(highlightParts(`${m('a')}, ${m('b')}`)).toEqual([
      { text: 'a', match: true },
      { text: ', ', match: false },
      { text: 'b', match: true },
    ]);
    expect(highlightParts('no match')).toEqual([{ text: 'no match', match: false }]);
  });
});

describe('parseSearchRequest', () => {
  it('takes filters, a limit and a cursor, and refuses bad ones', () => {
    const cursor = encodeSearchCursor({ createdAt: '2026-01-01T00:00:00.000Z', transcriptionId: newId('stt', new Date()), index: 3 });
    const r = parseSearchRequest({
      q: 'cancel',
      from: '2026-01-01T01:00:00+01:00',
      to: '2026-01-02T00:00:00Z',
      speaker: 'agent',
      limit: '50',
      cursor,
    });
    expect(r.filters).toEqual({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z', speaker: 'agent' });
    expect(r.limit).toBe(50);
    expect(r.after).toEqual(decodeSearchCursor(cursor));
    expect(parseSearchRequest({ q: 'x' }).limit).toBe(20);
    expect(refusal(() => parseSearchRequest({ q: 'x', limit: '101' }))).toMatch(/limit/);
    expect(refusal(() => parseSearchRequest({ q: 'x', cursor: 'abc' }))).toMatch(/cursor/);
    expect(refusal(() => parseSearchRequest({ q: 'x', from: 'yesterday' }))).toMatch(/from/);
    expect(refusal(() => parseSearchRequest({ q: 'x', speaker: 'bad label!' }))).toMatch(/speaker/);
    expect(refusal(() => parseSearchRequest({ q: 'x', callId: 'stt_1' }))).toMatch(/callId/);
  });
});
