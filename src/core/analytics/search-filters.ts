// Search filters by conversation analytics (docs/search.md, "Filters"): only segments of calls
// (or lone transcriptions) that matched a category, or whose figure is over or under a value.
// Each figure is its own pair of parameters (`silenceOver=60`, `interruptionsUnder=3`), so no
// parameter depends on another. Times in seconds, interruptions a count.
import { ScribedError } from '../errors.js';
import { isId } from '../ids.js';
import { FIGURE_FILTERS, type FigureName } from './summary.js';

export const FIGURE_NAMES = Object.keys(FIGURE_FILTERS) as FigureName[];
/** The largest value a figure filter takes: a year in seconds, far past any call. */
export const MAX_FIGURE_FILTER = 31_536_000;

export interface FigureBound {
  figure: FigureName;
  /** The stored column's unit: ms, or a count for interruptions. */
  over?: number;
  under?: number;
}

export interface AnalyticsFilters {
  category?: string;
  figures: FigureBound[];
}

const given = (v: unknown): boolean => v !== undefined && v !== '';

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `${field}: ${reason}`, { details: { field } });
}

function bound(raw: unknown, field: string, figure: FigureName): number {
  // A number when the route's schema has read it already (src/server/schemas/search.ts).
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : typeof raw === 'number' ? raw : NaN;
  if (!Number.isFinite(n) || n < 0 || n > MAX_FIGURE_FILTER)
    invalid(field, `a number from 0 to ${MAX_FIGURE_FILTER} (${figure === 'interruptions' ? 'a count' : 'seconds'})`);
  return figure === 'interruptions' ? n : Math.round(n * 1000);
}

/** `category=cat_...`, `<figure>Over=`, `<figure>Under=`; undefined when none is given. */
export function parseAnalyticsFilters(q: Record<string, unknown>): AnalyticsFilters | undefined {
  const out: AnalyticsFilters = { figures: [] };
  if (given(q.category)) {
    if (!isId(q.category, 'cat')) invalid('category', 'not a category id');
    out.category = q.category as string;
  }
  for (const figure of FIGURE_NAMES) {
    const b: FigureBound = { figure };
    if (given(q[`${figure}Over`])) b.over = bound(q[`${figure}Over`], `${figure}Over`, figure);
    if (given(q[`${figure}Under`])) b.under = bound(q[`${figure}Under`], `${figure}Under`, figure);
    if (b.over !== undefined || b.under !== undefined) out.figures.push(b);
  }
  return out.category === undefined && out.figures.length === 0 ? undefined : out;
}
