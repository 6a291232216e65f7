// A number said across two segments (src/text/redaction/carry.ts): the digits a final ends
// with are carried, and a run starting the next final or partial that makes three with them
// is masked; shorter ones and other policies are left as they are.
import { describe, expect, it } from 'vitest';
import { continueFinal, digitsCarried } from '../../../src/text/redaction/carry.js';
import { guardPartialText, redactFinal } from '../../../src/text/redaction/apply.js';
import type { TimelineWord } from '../../../src/core/final-event.js';

const timed = (text: string): TimelineWord[] =>
  text.split(' ').map((word, i) => ({ word, startSample: String(i * 100), endSample: String(i * 100 + 99), confidence: 0.9 }));
const final = (text: string, carried: number, policies: Array<'numbers' | 'pci'> = ['numbers']) =>
  continueFinal(redactFinal(text, timed(text), policies), carried, policies);

describe('digitsCarried', () => {
  it('counts the run a final ends with, adding what it carried when the run is all of it', () => {
    expect(digitsCarried('my card is one one', 0)).toBe(2);
    expect(digitsCarried('one', 1)).toBe(2);
    expect(digitsCarried('[NUMBER] thanks', 2)).toBe(0);
    expect(digitsCarried('one thanks', 2)).toBe(0);
    expect(digitsCarried('', 2)).toBe(2);
  });
});

describe('continueFinal', () => {
  it('masks a leading run that makes three digits with the carried ones, timed and listed', () => {
    const f = final('one thanks', 2);
    expect(f.text).toBe('[NUMBER] thanks');
    expect(f.words.map((w) => w.word)).toEqual(['[NUMBER]', 'thanks']);
    expect(f.redactions).toEqual([{ type: 'number', startSample: '0', endSample: '99' }]);
    expect(final('one two thanks', 1).text).toBe('[NUMBER] thanks');
  });

  it('leaves what stays under three digits, a final not starting with a number, and policies other than numbers', () => {
    expect(final('one thanks', 1).text).toBe('one thanks');
    expect(final('thanks one', 2).text).toBe('thanks one');
    expect(final('one thanks', 0).text).toBe('one thanks');
    expect(final('one thanks', 2, ['pci']).text).toBe('one thanks');
  });
});

describe('guardPartialText with carried digits', () => {
  it('masks a shown leading run that makes three with them; a trailing one is held back as before', () => {
    expect(guardPartialText('one', ['numbers'], 2)).toBe('');
    expect(guardPartialText('one thanks', ['numbers'], 2)).toBe('[NUMBER] thanks');
    expect(guardPartialText('one thanks', ['pci'], 2)).toBe('[NUMBER] thanks');
    expect(guardPartialText('one thanks', ['numbers'], 1)).toBe('one thanks');
    expect(guardPartialText('one thanks', ['email'], 2)).toBe('one thanks');
  });
});
