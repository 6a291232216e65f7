import { describe, expect, it } from 'vitest';
import { effectiveOptionsView, shapeFinal, textOptionNotices } from '../../src/text/final-text.js';

const words = ['um', 'call', 'four', 'one', 'five', 'five', 'five', 'five', 'one', 'two', 'one', 'two'].map((word, i) => ({ word, startSample: i, endSample: i + 1 }));
const text = words.map((w) => w.word).join(' ');

describe('shapeFinal', () => {
  it('changes nothing when no text option is set', () => {
    expect(shapeFinal(text, words, {})).toEqual({ text, words, annotations: {} });
  });

  it('removes fillers, keeps the raw text, and finds entities in the cleaned text', () => {
    const r = shapeFinal(text, words, { removeDisfluencies: true, entityCategories: ['phone_number'] });
    expect(r.text).toBe('call four one five five five five one two one two');
    expect(r.annotations.rawText).toBe(text);
    expect(r.words.map((w) => w.word)[0]).toBe('call');
    const e = r.annotations.entities![0]!;
    expect(r.text.slice(e.start, e.end)).toBe('four one five five five five one two one two');
  });
});

describe('notices and effectiveOptions', () => {
  it('says rewriteInstruction and undetectable categories are not applied', () => {
    expect(textOptionNotices({ rewriteInstruction: 'make it formal' }).map((n) => n.code)).toEqual(['REWRITE_NOT_APPLIED']);
    expect(textOptionNotices({ entityCategories: ['email', 'person'] }).map((n) => n.code)).toEqual(['ENTITY_CATEGORIES_NOT_DETECTED']);
    expect(textOptionNotices({ entityCategories: ['email'], removeDisfluencies: true })).toEqual([]);
    expect(effectiveOptionsView({ rewriteInstruction: 'x', processingContentStorage: true }).notApplied).toEqual([
      'rewriteInstruction',
      'processingContentStorage',
    ]);
  });
});
