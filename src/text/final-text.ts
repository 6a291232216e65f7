// The text options applied to a finalized segment, for real-time sessions and batch jobs
// alike: removeDisfluencies, entityCategories, rewriteInstruction. Pure.
//
// Order: fillers are removed first, then entities are detected on the cleaned text, so
// entity offsets index the text the client receives. With removeDisfluencies the
// recognizer's own text is kept in `rawText`. rewriteInstruction needs a language model;
// none runs on this server, so it is never applied and never faked: the session gets a
// REWRITE_NOT_APPLIED notice and effectiveOptions.notApplied names it.
import { removeDisfluencies } from './disfluency.js';
import { detectEntities, notDetectedCategories, type Entity } from './entities.js';

export interface FinalAnnotations {
  /** The recognizer's text before filler removal (only with removeDisfluencies). */
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

function categories(options: Options): string[] {
  return Array.isArray(options.entityCategories) ? (options.entityCategories as string[]) : [];
}

/** Apply the text options of `options` to one final. */
export function shapeFinal<W extends { word: string }>(text: string, words: readonly W[], options: Options): ShapedFinal<W> {
  const annotations: FinalAnnotations = {};
  let outText = text;
  let outWords = [...words];
  if (options.removeDisfluencies === true) {
    const cleaned = removeDisfluencies(text, words);
    annotations.rawText = text;
    outText = cleaned.text;
    outWords = cleaned.words;
  }
  const wanted = categories(options);
  if (wanted.length > 0) annotations.entities = detectEntities(outText, wanted);
  return { text: outText, words: outWords, annotations };
}

/** Options (or parts of them) accepted but not in effect, for effectiveOptions.notApplied. */
export function textOptionsNotApplied(options: Options): string[] {
  const out: string[] = [];
  if (typeof options.rewriteInstruction === 'string' && options.rewriteInstruction !== '') out.push('rewriteInstruction');
  for (const c of notDetectedCategories(categories(options))) out.push(`entityCategories.${c}`);
  if (options.processingContentStorage === true) out.push('processingContentStorage');
  return out;
}

/** Notices for the text options a session or job asked for but cannot get. */
export function textOptionNotices(options: Options): Notice[] {
  const out: Notice[] = [];
  if (typeof options.rewriteInstruction === 'string' && options.rewriteInstruction !== '') {
    out.push({
      code: 'REWRITE_NOT_APPLIED',
      message: 'rewriteInstruction was accepted, but no language model for rewriting runs on this server; finals are the unedited transcript',
    });
  }
  const missing = notDetectedCategories(categories(options));
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
