import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TimelineWord } from '../../../src/core/final-event.js';
import { REDACTION_POLICIES, type RedactionPolicy } from '../../../src/core/session-options.js';
import { detectEntities } from '../../../src/text/entities.js';
import { luhnValid } from '../../../src/text/numbers.js';
import { shapeFinal } from '../../../src/text/final-text.js';
import { guardPartial, redactFinal, redactText } from '../../../src/text/redaction/apply.js';
import { findSensitiveSpans, normalizeToken, numberRuns } from '../../../src/text/redaction/spans.js';

const DIGIT_NAMES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const spell = (digits: string) => [...digits].map((d) => DIGIT_NAMES[Number(d)]!);

function timeline(words: readonly string[]): TimelineWord[] {
  return words.map((word, i) => ({ word, startSample: String(i * 1000), endSample: String(i * 1000 + 800), confidence: 0.9 }));
}

/** Digits shown in a row anywhere in a word list: the longest run, counting spoken digits and
 * digit characters as the redactor reads them. */
function longestDigitRun(words: readonly string[]): number {
  return numberRuns(words.map(normalizeToken)).reduce(
    (m, run) =>
      Math.max(
        m,
        run.reduce((n, u) => n + u.digits.length, 0),
      ),
    0,
  );
}

/** A Luhn-valid card number with `length` digits, from a random body. */
function luhnComplete(body: string): string {
  for (let d = 0; d < 10; d++) if (luhnValid(body + d)) return body + d;
  throw new Error('unreachable');
}

const words = fc.array(
  fc.oneof(
    fc.constantFrom(
      ...DIGIT_NAMES,
      'oh',
      'double',
      'triple',
      'twenty',
      'forty',
      'eleven',
      'hundred',
      'thousand',
      'and',
      'a',
      'my',
      'card',
      'is',
      'at',
      'dot',
      'com',
      'expires',
      'dollars',
      'first',
    ),
    fc.stringMatching(/^[0-9]{1,5}$/),
    fc.stringMatching(/^[a-z]{1,6}$/),
  ),
  { maxLength: 60 },
);

describe('redaction spans', () => {
  it('catches a spoken card number read digit by digit, with its expiry and code near it', () => {
    const said = ['my', 'card', 'is', ...spell('4111111111111111'), 'expires', 'twelve', 'twenty', 'six', 'code', 'one', 'two', 'three'];
    const spans = findSensitiveSpans(said, ['pci']);
    expect(spans.map((s) => s.type)).toEqual(['card_number', 'card_expiry', 'card_security_code']);
    expect(spans[0]).toMatchObject({ first: 3, last: 18 });
  });

  it('reads card digits grouped as people say them ("forty one eleven")', () => {
    const said = ['forty', 'one', ...Array<string>(7).fill('eleven'), 'thanks'];
    expect(findSensitiveSpans(said, ['pci'])).toEqual([{ type: 'card_number', first: 0, last: 8 }]);
  });

  it('leaves a run that holds no Luhn-valid 13-19 digits to the numbers policy', () => {
    const said = spell('123456789012');
    expect(findSensitiveSpans(said, ['pci'])).toEqual([]);
    expect(findSensitiveSpans(said, ['pci', 'numbers'])).toEqual([{ type: 'number', first: 0, last: 11 }]);
  });

  it('names a 13-19 digit run a card even when Luhn fails (a misheard digit breaks Luhn)', () => {
    // Allison's "4 1 1 1 ..." heard as "color one one one ...": fifteen ones, not Luhn-valid.
    const said = ['color', ...Array<string>(15).fill('one'), 'thanks'];
    expect(findSensitiveSpans(said, ['pci'])).toEqual([{ type: 'card_number', first: 1, last: 15 }]);
  });

  it('names a card with one digit misheard as a word, inside the run or beside a 12-digit run', () => {
    const inside = [...spell('4111111'), 'blue', ...spell('11111111')];
    expect(findSensitiveSpans(inside, ['pci'])).toEqual([{ type: 'card_number', first: 0, last: 15 }]);
    const beside = ['polar', ...spell('111111111111'), 'online'];
    expect(findSensitiveSpans(beside, ['pci'])).toEqual([{ type: 'card_number', first: 1, last: 12 }]);
  });

  it('does not join a phone number and its extension, nor a 12-digit run framed by plain words, into a card', () => {
    const phone = ['call', ...spell('4155551212'), 'extension', ...spell('4567')];
    expect(findSensitiveSpans(phone, ['pci', 'phone', 'numbers']).map((s) => s.type)).toEqual(['phone', 'number']);
    const framed = ['my', 'account', 'is', ...spell('123456789012'), 'and', 'thanks'];
    expect(findSensitiveSpans(framed, ['pci'])).toEqual([]);
  });

  it('names SSNs, phones and emails, written or spoken', () => {
    expect(redactText('my social is 123-45-6789 ok', ['ssn'])).toBe('my social is [SSN] ok');
    expect(redactText('call four one five five five five one two one two now', ['phone'])).toBe('call [PHONE] now');
    expect(redactText('call +44 20 7946 0958.', ['phone'])).toBe('call [PHONE].');
    expect(redactText('write to john dot smith at example dot com please', ['email'])).toBe('write to [EMAIL] please');
    expect(redactText('write to john@example.com', ['email'])).toBe('write to [EMAIL]');
  });

  it('numbers: three digits or more, spoken or written; two stay', () => {
    expect(redactText('room one oh one and gate twenty two', ['numbers'])).toBe('room [NUMBER] and gate twenty two');
    expect(redactText('it costs 1,250 or two hundred', ['numbers'])).toBe('it costs [NUMBER] or [NUMBER]');
    expect(redactText('oh I see', ['numbers'])).toBe('oh I see');
  });

  it('never leaves three digits in a row under numbers (property)', () => {
    fc.assert(
      fc.property(words, (ws) => {
        const out = redactText(ws.join(' '), ['numbers'])
          .split(' ')
          .filter((w) => w !== '');
        expect(longestDigitRun(out)).toBeLessThan(3);
        expect(out.join(' ')).not.toMatch(/\d{3}/);
      }),
      { numRuns: 500 },
    );
  });

  it('catches every Luhn-valid spoken 16-digit number under pci, wherever it is said (property)', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[0-9]{15}$/),
        fc.array(fc.constantFrom('my', 'card', 'is', 'please', 'thanks'), { maxLength: 5 }),
        fc.array(fc.constantFrom('ok', 'bye'), { maxLength: 5 }),
        (body, before, after) => {
          const card = luhnComplete(body);
          const said = [...before, ...spell(card), ...after];
          const spans = findSensitiveSpans(said, ['pci']);
          const cardSpan = spans.find((s) => s.type === 'card_number');
          expect(cardSpan).toBeDefined();
          expect(cardSpan!.first).toBe(before.length);
          expect(cardSpan!.last).toBe(before.length + 15);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('redactFinal', () => {
  it("keeps each token timed from the span's first word to its last, and lists no values", () => {
    const said = ['pay', 'with', ...spell('4111111111111111'), 'thanks'];
    const r = redactFinal(said.join(' '), timeline(said), ['pci', 'numbers']);
    expect(r.text).toBe('pay with [CARD_NUMBER] thanks');
    expect(r.words.map((w) => w.word)).toEqual(['pay', 'with', '[CARD_NUMBER]', 'thanks']);
    expect(r.words[2]).toMatchObject({ startSample: '2000', endSample: String(17 * 1000 + 800) });
    expect(r.redactions).toEqual([{ type: 'card_number', startSample: '2000', endSample: '17800' }]);
    expect(`${r.text} ${r.words.map((w) => w.word).join(' ')}`).not.toMatch(/one|\d/);
  });

  it('preserves timing: words outside spans unchanged, tokens cover their spans, order kept (property)', () => {
    fc.assert(
      fc.property(words, fc.subarray([...REDACTION_POLICIES], { minLength: 1 }), (ws, policies) => {
        const input = timeline(ws);
        const r = redactFinal(ws.join(' '), input, policies as RedactionPolicy[]);
        let k = 0;
        for (const w of r.words) {
          const at = input.findIndex((x, i) => i >= k && x.startSample === w.startSample);
          expect(at).toBeGreaterThanOrEqual(k);
          if (w.word.startsWith('[')) {
            const end = input.findIndex((x, i) => i >= at && x.endSample === w.endSample);
            expect(end).toBeGreaterThanOrEqual(at);
            k = end + 1;
          } else {
            expect(w).toEqual(input[at]);
            k = at + 1;
          }
        }
        expect(r.redactions.length).toBe(r.words.filter((w) => /^\[[A-Z_]+\]$/.test(w.word)).length);
      }),
      { numRuns: 300 },
    );
  });

  it('readable text and entities made from redacted words show no 3 digits in a row under numbers (property)', () => {
    fc.assert(
      fc.property(words, (ws) => {
        const r = redactFinal(ws.join(' '), timeline(ws), ['numbers']);
        const shaped = shapeFinal(r.text, r.words, {
          readableText: true,
          entityCategories: ['credit_card', 'spelled_digits', 'phone_number', 'money', 'date'],
        });
        // A money value is written with cents ("USD 2.00" for "two dollars"): formatting, not
        // digits said, so only its span text is held to the rule.
        const entities = (shaped.annotations.entities ?? []).map((e) => (e.category === 'money' ? e.text : `${e.text} ${e.value}`));
        const shown = `${shaped.text} ${shaped.words.map((w) => w.word).join(' ')} ${shaped.annotations.rawText ?? ''} ${entities.join(' ')}`;
        expect(shown).not.toMatch(/\d[\d,.]*\d[\d,.]*\d/);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves nothing for entity detection to find in a redacted span', () => {
    const said = [...spell('4111111111111111')];
    const r = redactFinal(said.join(' '), timeline(said), ['pci']);
    expect(detectEntities(r.text, ['credit_card', 'spelled_digits', 'phone_number'])).toEqual([]);
  });
});

describe('guardPartial', () => {
  const merge = (_f: { word: string }, _l: { word: string }, token: string) => ({ word: token });
  const show = (text: string, policies: RedactionPolicy[]) =>
    guardPartial(
      text.split(' ').map((word) => ({ word })),
      policies,
      merge,
    );

  it('holds back a trailing run that could still grow, and masks a long one before it', () => {
    expect(show('my card is four one', ['pci']).words.map((w) => w.word)).toEqual(['my', 'card', 'is']);
    expect(show('my card is four one', ['pci']).heldBack).toBe(2);
    expect(show('room one two three please', ['pci']).words.map((w) => w.word)).toEqual(['room', '[NUMBER]', 'please']);
    expect(show('say double', ['numbers']).words.map((w) => w.word)).toEqual(['say']);
  });

  it('no partial of any prefix shows three digits in a row (property)', () => {
    fc.assert(
      fc.property(words, fc.subarray(['pci', 'numbers', 'ssn', 'phone'] as RedactionPolicy[], { minLength: 1 }), (ws, policies) => {
        for (let n = 0; n <= ws.length; n++) {
          const shown = guardPartial(
            ws.slice(0, n).map((word) => ({ word })),
            policies,
            merge,
          ).words.map((w) => w.word);
          expect(longestDigitRun(shown)).toBeLessThan(3);
          expect(shown.join(' ')).not.toMatch(/\d{3}/);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('changes nothing without policies', () => {
    expect(show('one two three', []).words.map((w) => w.word)).toEqual(['one', 'two', 'three']);
  });
});
