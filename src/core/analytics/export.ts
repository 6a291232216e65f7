// The analytics of a date range as CSV (docs/analytics.md, "Export"), and the range's checks.
// One row per finished call or lone transcription; RFC 4180 quoting; a cell a spreadsheet
// would read as a formula (a category name starting with =, +, - or @) gets a leading '.
import { ScribedError } from '../errors.js';
import type { ConversationAnalytics } from './summary.js';

export const MAX_EXPORT_ROWS = 10_000;
export interface ExportRow {
  subjectId: string;
  callId: string | null;
  transcriptionId: string | null;
  agentId: string | null;
  completedAt: string;
  analytics: ConversationAnalytics;
}

/** The range when `from` is not given: the week before `to`. */
export const DEFAULT_EXPORT_DAYS = 7;

function invalid(field: string, message: string): never {
  throw new ScribedError('VALIDATION_FAILED', `${field}: ${message}`, { details: { field } });
}

function isoTime(raw: unknown, field: string): string {
  if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(Date.parse(raw))) invalid(field, 'an ISO 8601 time');
  return new Date(raw).toISOString();
}

const given = (v: unknown): boolean => v !== undefined && v !== '';

/** `from` (inclusive; default DEFAULT_EXPORT_DAYS before `to`) and `to` (exclusive; default
 * now). A range with `from` at or after `to` holds nothing, as in search. The size is bounded
 * by rows (MAX_EXPORT_ROWS), not by days. */
export function parseRange(q: Record<string, unknown>, now: Date): { from: string; to: string } {
  const to = given(q.to) ? isoTime(q.to, 'to') : now.toISOString();
  const from = given(q.from) ? isoTime(q.from, 'from') : new Date(Date.parse(to) - DEFAULT_EXPORT_DAYS * 86_400_000).toISOString();
  return { from, to };
}

export const CSV_COLUMNS = [
  'subjectId',
  'callId',
  'transcriptionId',
  'agentId',
  'completedAt',
  'durationMs',
  'talkMs',
  'nonTalkMs',
  'longestSilenceMs',
  'overtalkMs',
  'overtalkShare',
  'interruptions',
  'turns',
  'legs',
  'categories',
] as const;

export function csvCell(v: string | number | null): string {
  if (v === null) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** `legs`: `speaker talkShare wordsPerMinute` per leg, `;` between legs; `categories`: the
 * matched categories' names, `;` between them. */
export function csvRow(r: ExportRow): string {
  const f = r.analytics.figures;
  const legs = f.legs.map((l) => `${l.speaker ?? '-'} ${l.talkShare} ${l.wordsPerMinute ?? '-'}`).join(';');
  const cells = [
    r.subjectId,
    r.callId,
    r.transcriptionId,
    r.agentId,
    r.completedAt,
    f.durationMs,
    f.talkMs,
    f.nonTalk.totalMs,
    f.nonTalk.longestMs,
    f.overtalk.totalMs,
    f.overtalk.share,
    f.interruptions.length,
    f.turns,
    legs,
    r.analytics.categories.map((c) => c.name).join(';'),
  ];
  return cells.map(csvCell).join(',');
}

export function csvHeader(): string {
  return CSV_COLUMNS.join(',');
}
