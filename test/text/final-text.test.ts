import { describe, expect, it } from 'vitest';
import { effectiveOptionsView, shapeFinal, textOptionNotices } from '../../src/text/final-text.js';

const words = ['um', 'call', 'four', 'one', 'five', 'five', 'five', 'five', 'one', 'two', 'one', 'two'].map((word, i) => ({
  word,
  startSample: i,
  endSample: i + 1,
}));
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

describe('shapeFinal with readableText', () => {
  const spoken =
    'i paid twenty five dollars and fifty cents on march third twenty twenty four call four one five five five five one two one two';
  const timed = spoken.split(' ').map((word, i) => ({ word, startSample: i * 10, endSample: i * 10 + 8 }));
  const ALL = ['money', 'date', 'phone_number', 'credit_card', 'spelled_digits', 'email'];

  it('writes numerals and sentence case, keeps the recognizer text in rawText, words match the text', () => {
    const r = shapeFinal(spoken, timed, { readableText: true });
    expect(r.text).toBe('I paid $25.50 on March 3, 2024 call 415-555-1212');
    expect(r.annotations.rawText).toBe(spoken);
    expect(r.words.map((w) => w.word).join(' ')).toBe(r.text);
    // Each word of the final is one word of its text; a numeral said in several words spans them.
    expect(r.words.filter((w) => ['$25.50', 'March', '3,', '2024'].includes(w.word))).toEqual([
      { word: '$25.50', startSample: 20, endSample: 78 },
      { word: 'March', startSample: 90, endSample: 98 },
      { word: '3,', startSample: 100, endSample: 108 },
      { word: '2024', startSample: 110, endSample: 138 },
    ]);
  });

  it('detects entities with offsets into the readable text', () => {
    const r = shapeFinal(spoken, timed, { readableText: true, entityCategories: ALL });
    expect(r.annotations.entities!.map((e) => [e.category, e.value, e.text])).toEqual([
      ['money', 'USD 25.50', '$25.50'],
      ['date', '2024-03-03', 'March 3, 2024'],
      ['phone_number', '4155551212', '415-555-1212'],
    ]);
    for (const e of r.annotations.entities!) expect(r.text.slice(e.start, e.end)).toBe(e.text);
  });

  it('still finds spelled digits (read out one by one) once they are written as digits', () => {
    const r = shapeFinal('my pin is four four nine one two', [], { readableText: true, entityCategories: ['spelled_digits'] });
    expect(r.text).toBe('My pin is 44912');
    expect(r.annotations.entities).toEqual([{ category: 'spelled_digits', value: '44912', text: '44912', start: 10, end: 15 }]);
  });

  it('keeps entity offsets inside words it did not rewrite', () => {
    const text = 'write to john dot smith at example dot com i said';
    const r = shapeFinal(text, [], { readableText: true, entityCategories: ['email'] });
    const e = r.annotations.entities![0]!;
    expect(r.text).toBe('Write to john dot smith at example dot com I said');
    expect(e.text).toBe('john dot smith at example dot com');
    expect(r.text.slice(e.start, e.end)).toBe(e.text);
  });

  it('applies after filler removal: "twenty uh five" is 25', () => {
    const r = shapeFinal('it was twenty uh five', [], { readableText: true, removeDisfluencies: true });
    expect(r.text).toBe('It was 25');
    expect(r.annotations.rawText).toBe('it was twenty uh five');
  });

  it('sends no rawText when the readable text is the recognizer text', () => {
    const r = shapeFinal('Hello there', [], { readableText: true });
    expect(r).toEqual({ text: 'Hello there', words: [], annotations: {} });
  });

  it('leaves the text alone when readableText is false or absent (sessions stored before it)', () => {
    expect(shapeFinal(spoken, timed, { readableText: false }).text).toBe(spoken);
    expect(shapeFinal(spoken, timed, {}).text).toBe(spoken);
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
