// The text options applied to a finalized segment, for real-time sessions and batch jobs
// alike: removeDisfluencies, readableText, entityCategories, rewriteInstruction. Pure.
//
// Order: fillers are removed first, then the text is made readable (numerals, sentence case:
// src/text/readable-text.ts), then entities are detected. Detection reads the words before the
// readable step (every detector knows the spoken forms, and "spelled_digits" means digits that
// were read out), and each entity's span is mapped onto the readable text, so entity offsets
// index the text the client receives. With removeDisfluencies, or whenever readableText
// changed the text, the recognizer's own text is kept in `rawText`. rewriteInstruction needs a language model;
// none runs on this server, so it is never applied and never faked: the session gets a
// REWRITE_NOT_APPLIED notice and effectiveOptions.notApplied names it.
import { removeDisfluencies } from './disfluency.js';
import { detectEntities } from './entities.js';
import { mapSpan, readableFinal } from './readable-text.js';
import { requestedCategories, type Entity, type FinalAnnotations, type ShapedFinal } from '../core/text-options.js';

// The option-level decisions (what is not applied, the notices, the view) are the core's; they
// are re-exported so callers of the text options find them here.
export { effectiveOptionsView, textOptionNotices, textOptionsNotApplied } from '../core/text-options.js';
export type { FinalAnnotations, Notice, ShapedFinal } from '../core/text-options.js';

type Options = Record<string, unknown>;

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
  const wanted = requestedCategories(options);
  // Absent in sessions stored before the option existed: they keep the recognizer's text.
  if (options.readableText === true) {
    const readable = readableFinal(outText, outWords);
    if (wanted.length > 0) {
      const mapped = detectEntities(outText, wanted).map((e) => {
        const at = mapSpan(outText, readable.groups, e.start, e.end);
        return { ...e, text: readable.text.slice(at.start, at.end), start: at.start, end: at.end };
      });
      // A span grown to whole numerals could meet its neighbour's: keep the first (entities
      // never overlap).
      const kept: Entity[] = [];
      for (const e of mapped) if (kept.length === 0 || e.start >= kept[kept.length - 1]!.end) kept.push(e);
      annotations.entities = kept;
    }
    if (readable.text !== text) annotations.rawText = text;
    return { text: readable.text, words: readable.words, annotations };
  }
  if (wanted.length > 0) annotations.entities = detectEntities(outText, wanted);
  return { text: outText, words: outWords, annotations };
}
