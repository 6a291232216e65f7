// Full-text search over an account's final segments (docs/search.md): the web-search query
// syntax (words, "quoted phrases", OR between alternatives, -exclusion) parsed into words of
// letters and digits only, then rebuilt for each engine: an FTS5 MATCH expression for SQLite
// and websearch_to_tsquery calls, one per phrase, for PostgreSQL. Since every word is
// reduced to letters and digits before it is quoted, no text from the request ever reaches
// either engine's query syntax as syntax. Also the request's filters and keyset cursor.
import { checkExternalId, SPEAKER_PATTERN } from './calls.js';
import { ScribedError } from './errors.js';
import { isId } from './ids.js';
import { parseAnalyticsFilters, type AnalyticsFilters } from './analytics/search-filters.js';

export const MAX_SEARCH_QUERY_CHARS = 256;
/** Words and phrases in one query (a phrase counts once); more makes no useful search. */
export const MAX_SEARCH_TERMS = 16;
export const MAX_SEARCH_PHRASE_WORDS = 16;
export const DEFAULT_SEARCH_PAGE_SIZE = 20;
export const MAX_SEARCH_PAGE_SIZE = 100;
export const MAX_SEARCH_TITLE_CHARS = 200;

/** Private-use characters the engines put around a match: they cannot occur in a hit's
 * marked text otherwise (stored text is from the recognizer), so splitting on them is exact. */
/** What the API document says a from or to looks like (the parser takes any ISO 8601 time). */
export const SEARCH_TIME_PATTERN =
  '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d(\\.\\d{1,9})?)?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)$';

export const MATCH_OPEN = '\uE000';
export const MATCH_CLOSE = '\uE001';

/** One or more words that must appear in this order (a single word is a phrase of one). */
export type SearchPhrase = readonly string[];

export interface SearchQuery {
  /** Each group must match: one of its alternatives (a group of one has no OR). */
  readonly all: readonly (readonly SearchPhrase[])[];
  /** None of these may match. */
  readonly none: readonly SearchPhrase[];
}

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `${field}: ${reason}`, { details: { field } });
}

/** Lower-cased runs of letters and digits: both engines' tokenizers (FTS5 unicode61 and
 * PostgreSQL's `simple` configuration) split text at the same places for these. */
function words(s: string): string[] {
  return (
    s
      .normalize('NFC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  ).slice();
}

interface Token {
  kind: 'phrase' | 'or';
  words: string[];
  negated: boolean;
}

function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  // A quoted phrase (an unclosed quote runs to the end), or a run without spaces or quotes.
  const re = /(-?)"([^"]*)"?|(\S*[^\s"]|\S)/gy;
  let i = 0;
  while (i < q.length) {
    if (/\s/.test(q[i]!)) {
      i++;
      continue;
    }
    re.lastIndex = i;
    const m = re.exec(q);
    if (!m || m[0].length === 0) break;
    i = re.lastIndex;
    if (m[2] !== undefined) {
      tokens.push({ kind: 'phrase', words: words(m[2]), negated: m[1] === '-' });
    } else {
      const raw = m[3]!;
      if (raw === 'OR') tokens.push({ kind: 'or', words: [], negated: false });
      else if (raw.startsWith('-') && raw.length > 1) tokens.push({ kind: 'phrase', words: words(raw.slice(1)), negated: true });
      else tokens.push({ kind: 'phrase', words: words(raw), negated: false });
    }
  }
  // Punctuation-only terms (`-`, `!!`) carry no word: dropped, as both engines would.
  return tokens.filter((t) => t.kind === 'or' || t.words.length > 0);
}

/** Parses `q` of GET .../stt/search. Refuses an empty query, one over the limits, an
 * exclusion inside an OR, and a query of exclusions only (which would list everything). */
export function parseSearchQuery(raw: unknown): SearchQuery {
  if (typeof raw !== 'string' || raw.trim() === '') invalid('q', 'a search query is required');
  if ([...raw].length > MAX_SEARCH_QUERY_CHARS) invalid('q', `at most ${MAX_SEARCH_QUERY_CHARS} characters`);
  const tokens = tokenize(raw);
  const all: SearchPhrase[][] = [];
  const none: SearchPhrase[] = [];
  let joinNext = false;
  for (const t of tokens) {
    if (t.kind === 'or') {
      // OR between two alternatives; leading, trailing or doubled OR is an ordinary word's
      // absence, as websearch_to_tsquery reads it.
      joinNext = all.length > 0;
      continue;
    }
    if (t.words.length > MAX_SEARCH_PHRASE_WORDS) invalid('q', `a phrase has at most ${MAX_SEARCH_PHRASE_WORDS} words`);
    if (t.negated) {
      if (joinNext) invalid('q', 'an -exclusion cannot be an OR alternative');
      none.push(t.words);
      continue;
    }
    if (joinNext) all[all.length - 1]!.push(t.words);
    else all.push([t.words]);
    joinNext = false;
  }
  const terms = all.reduce((n, g) => n + g.length, 0) + none.length;
  if (terms > MAX_SEARCH_TERMS) invalid('q', `at most ${MAX_SEARCH_TERMS} words or phrases`);
  if (all.length === 0) invalid('q', none.length > 0 ? 'needs a word or phrase to find, not only exclusions' : 'has no word to search for');
  return { all, none };
}

/** Each word double-quoted: FTS5 reads a quoted string as a plain term; the words hold
 * letters and digits only, so there is no quote to escape. */
function fts5Phrase(p: SearchPhrase): string {
  return `"${p.join(' ')}"`;
}

/** The FTS5 MATCH expression: `(a OR b) AND "c d" NOT ("e" OR "f")`. */
export function toFts5Match(q: SearchQuery): string {
  const positive = q.all.map((g) => (g.length === 1 ? fts5Phrase(g[0]!) : `(${g.map(fts5Phrase).join(' OR ')})`)).join(' AND ');
  if (q.none.length === 0) return positive;
  return `(${positive}) NOT (${q.none.map(fts5Phrase).join(' OR ')})`;
}

/** The query for PostgreSQL: a tsquery expression of websearch_to_tsquery calls, one per
 * phrase, each taking its phrase (rebuilt from the parsed words, quoted) as a bound parameter;
 * combined with tsquery's own operators so the grouping is the parser's, not a precedence
 * rule of the web-search syntax (where `a OR b -c` reads as a | (b & !c)). */
export function toPostgresTsquery(q: SearchQuery): { sql: string; params: string[] } {
  const params: string[] = [];
  const one = (p: SearchPhrase): string => {
    params.push(`"${p.join(' ')}"`);
    return "websearch_to_tsquery('simple', ?)";
  };
  const groups = q.all.map((g) => (g.length === 1 ? one(g[0]!) : `(${g.map(one).join(' || ')})`));
  let sql = groups.join(' && ');
  if (q.none.length > 0) sql = `(${sql}) && !!(${q.none.map(one).join(' || ')})`;
  return { sql, params };
}

/** A hit's text as runs, each a match or not, from the engine's marked text. */
export function highlightParts(marked: string): { text: string; match: boolean }[] {
  const parts: { text: string; match: boolean }[] = [];
  const push = (text: string, match: boolean): void => {
    if (text.length === 0) return;
    const last = parts[parts.length - 1];
    if (last && last.match === match) last.text += text;
    else parts.push({ text, match });
  };
  let match = false;
  let run = '';
  for (const ch of marked) {
    if (ch === MATCH_OPEN || ch === MATCH_CLOSE) {
      push(run, match);
      run = '';
      match = ch === MATCH_OPEN;
    } else {
      run += ch;
    }
  }
  push(run, match);
  // FTS5 marks a phrase as one run, PostgreSQL each of its words: matches parted only by
  // spaces read as one run, so both engines answer alike.
  const joined: { text: string; match: boolean }[] = [];
  for (const p of parts) {
    const prev = joined[joined.length - 1];
    const gap = joined[joined.length - 2];
    if (p.match && prev && !prev.match && /^\s+$/.test(prev.text) && gap?.match) {
      joined.pop();
      gap.text += prev.text + p.text;
    } else {
      joined.push(p);
    }
  }
  return joined;
}

/** Where a page of hits ends: newest first by (createdAt, transcriptionId, index). */
export interface SearchPosition {
  createdAt: string;
  transcriptionId: string;
  index: number;
}

export function encodeSearchCursor(p: SearchPosition): string {
  return Buffer.from(JSON.stringify([p.createdAt, p.transcriptionId, p.index]), 'utf8').toString('base64url');
}

export function decodeSearchCursor(cursor: string): SearchPosition {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    v = null;
  }
  if (
    !Array.isArray(v) ||
    v.length !== 3 ||
    typeof v[0] !== 'string' ||
    Number.isNaN(Date.parse(v[0])) ||
    !isId(v[1], 'stt') ||
    !Number.isSafeInteger(v[2]) ||
    (v[2] as number) < 0
  ) {
    invalid('cursor', 'not a cursor returned by this search');
  }
  return { createdAt: v[0] as string, transcriptionId: v[1] as string, index: v[2] as number };
}

export interface SearchFilters {
  /** Segments stored at or after this ISO time. */
  from?: string;
  /** Segments stored before this ISO time. */
  to?: string;
  callId?: string;
  externalId?: string;
  speaker?: string;
  /** The History row's title, exactly. */
  title?: string;
  /** Calls (or lone transcriptions) by their analytics: a category matched, figures' bounds. */
  analytics?: AnalyticsFilters;
}

export interface SearchRequest {
  query: SearchQuery;
  filters: SearchFilters;
  limit: number;
  after?: SearchPosition;
}

function isoTime(raw: unknown, field: string): string {
  if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(Date.parse(raw)))
    invalid(field, 'must be an ISO 8601 time');
  // Stored times are ISO strings in UTC with milliseconds: compare in that one spelling.
  return new Date(raw).toISOString();
}

const given = (v: unknown): boolean => v !== undefined && v !== '';

/** `?q=&from=&to=&callId=&externalId=&speaker=&title=&limit=&cursor=` of GET .../stt/search. */
export function parseSearchRequest(q: Record<string, unknown>): SearchRequest {
  const query = parseSearchQuery(q.q);
  let limit = DEFAULT_SEARCH_PAGE_SIZE;
  if (given(q.limit)) {
    // A number when the route's schema has read it already (src/server/schemas/search.ts).
    const n = typeof q.limit === 'string' ? Number(q.limit) : typeof q.limit === 'number' ? q.limit : NaN;
    if (!Number.isInteger(n) || n < 1 || n > MAX_SEARCH_PAGE_SIZE) invalid('limit', `must be an integer from 1 to ${MAX_SEARCH_PAGE_SIZE}`);
    limit = n;
  }
  const filters: SearchFilters = {};
  if (given(q.from)) filters.from = isoTime(q.from, 'from');
  if (given(q.to)) filters.to = isoTime(q.to, 'to');
  // from at or after to is an empty range: no hits, as any range holding no finals.
  if (given(q.callId)) {
    if (!isId(q.callId, 'call')) invalid('callId', 'not a call id');
    filters.callId = q.callId as string;
  }
  if (given(q.externalId)) filters.externalId = checkExternalId(q.externalId, 'externalId');
  if (given(q.speaker)) {
    if (typeof q.speaker !== 'string' || !SPEAKER_PATTERN.test(q.speaker)) invalid('speaker', 'not a speaker label');
    filters.speaker = q.speaker;
  }
  if (given(q.title)) {
    if (typeof q.title !== 'string' || [...q.title].length > MAX_SEARCH_TITLE_CHARS)
      invalid('title', `at most ${MAX_SEARCH_TITLE_CHARS} characters`);
    filters.title = q.title;
  }
  const analytics = parseAnalyticsFilters(q);
  if (analytics) filters.analytics = analytics;
  const out: SearchRequest = { query, filters, limit };
  if (given(q.cursor)) {
    if (typeof q.cursor !== 'string') invalid('cursor', 'not a cursor returned by this search');
    out.after = decodeSearchCursor(q.cursor);
  }
  return out;
}
