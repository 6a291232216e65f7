// What the text options (removeDisfluencies, readableText, entityCategories,
// rewriteInstruction) ask of a final, and what this server can give: the shapes of a shaped
// final and its entities, and the notices for what it cannot apply. Pure. The detectors that
// do the shaping are in src/text/ (final-text.ts); they build on these types.
import type { EntityCategory } from './session-options.js';

export interface Entity {
  category: EntityCategory;
  /** The matched text, exactly text.slice(start, end). */
  text: string;
  /** Normalised value (src/text/entities.ts lists each category's). */
  value: string;
  start: number;
  end: number;
}

export interface FinalAnnotations {
  /** The recognizer's text (with removeDisfluencies, and when readableText changed it). */
  rawText?: string;
  /** Entities found in `text` (only with entityCategories). */
  entities?: Entity[];
}

export interface ShapedFinal<W> {
  text: string;
  words: W[];
  annotations: FinalAnnotations;
}

export interface Notice {
  code: string;
  message: string;
}

type Options = Record<string, unknown>;

/** Categories this server can detect (src/text/entities.ts); the rest are accepted but never
 * found. */
export const DETECTABLE_CATEGORIES: readonly EntityCategory[] = ['email', 'money', 'date', 'credit_card', 'phone_number', 'spelled_digits'];

export function notDetectedCategories(requested: readonly string[]): string[] {
  return requested.filter((c) => !(DETECTABLE_CATEGORIES as readonly string[]).includes(c));
}

export function requestedCategories(options: Options): string[] {
  return Array.isArray(options.entityCategories) ? (options.entityCategories as string[]) : [];
}

/** Options (or parts of them) accepted but not in effect, for effectiveOptions.notApplied. */
export function textOptionsNotApplied(options: Options): string[] {
  const out: string[] = [];
  if (typeof options.rewriteInstruction === 'string' && options.rewriteInstruction !== '') out.push('rewriteInstruction');
  for (const c of notDetectedCategories(requestedCategories(options))) out.push(`entityCategories.${c}`);
  if (options.processingContentStorage === true) out.push('processingContentStorage');
  return out;
}

/** Notices for the text options a session or job asked for but cannot get. */
export function textOptionNotices(options: Options): Notice[] {
  const out: Notice[] = [];
  if (typeof options.rewriteInstruction === 'string' && options.rewriteInstruction !== '') {
    out.push({
      code: 'REWRITE_NOT_APPLIED',
      message:
        'rewriteInstruction was accepted, but no language model for rewriting runs on this server; finals are the unedited transcript',
    });
  }
  const missing = notDetectedCategories(requestedCategories(options));
  if (missing.length > 0) {
    out.push({
      code: 'ENTITY_CATEGORIES_NOT_DETECTED',
      message: `no named-entity model runs on this server; these categories are never detected: ${missing.join(', ')}`,
    });
  }
  return out;
}

/** effectiveOptions as shown to clients: the stored options plus `notApplied`. */
export function effectiveOptionsView(options: Options): Options {
  return { ...options, notApplied: textOptionsNotApplied(options) };
}
