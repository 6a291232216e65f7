// options.redact on a live session (src/session/finals.ts) with the fake engine hearing a card
// number one word per frame: every partial on the way shows no three digits in a row, the
// final, its stored segment and rawText carry the token and the redactions (timed even without
// alignment), and a session without the option is untouched.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeEngine, tone } from '../helpers/fake-engine.js';
import { audioFrame, liveSession, RecordingSocket } from '../helpers/live.js';
import { normalizeToken, numberRuns } from '../../src/text/redaction/spans.js';

const FRAME = 640;
const CARD = [
  'my',
  'card',
  'is',
  'four',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'one',
  'thanks',
];
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

function longestDigitRun(text: string): number {
  const norm = text
    .split(/\s+/)
    .map(normalizeToken)
    .filter((t) => t !== '');
  return numberRuns(norm).reduce(
    (m, run) =>
      Math.max(
        m,
        run.reduce((n, u) => n + u.digits.length, 0),
      ),
    0,
  );
}

async function speakCard(options: Record<string, unknown>) {
  const engine = new FakeEngine({ samplesPerWord: FRAME, script: CARD });
  const h = await liveSession(engine, options);
  open.push(h);
  const socket = new RecordingSocket();
  await h.session.attach(socket);
  const audio = tone(16000, 0.04);
  for (let i = 0; i < CARD.length; i++) await h.session.onBinary(socket, audioFrame(1, i * FRAME, audio.subarray(0, FRAME)));
  await h.session.onText(socket, JSON.stringify({ type: 'commit' }));
  await socket.until((ev) => ev.some((e) => e.type === 'committed'));
  return { h, socket };
}

describe('redact on a live session', () => {
  it('without it, partials and the final show the digits (the fixture says what the guard must hide)', async () => {
    const { socket } = await speakCard({});
    expect(Math.max(...socket.ofType('partial').map((p) => longestDigitRun(p.text)))).toBeGreaterThanOrEqual(16);
    expect(longestDigitRun(socket.ofType('final')[0]!.text)).toBe(16);
  });

  it('partials never show three digits; the final, stored segment and rawText hold the token, and the spans are kept', async () => {
    const { h, socket } = await speakCard({
      redact: ['pci', 'numbers'],
      readableText: true,
      removeDisfluencies: true,
      entityCategories: ['credit_card', 'spelled_digits'],
    });
    const partials = socket.ofType('partial');
    expect(partials.length).toBeGreaterThan(3);
    for (const p of partials) expect(longestDigitRun(p.text), p.text).toBeLessThan(3);
    // A run still growing is held back, then masked once it is three digits long.
    expect(partials.some((p) => p.text.includes('[NUMBER]'))).toBe(true);
    const final = socket.ofType('final')[0]!;
    expect(final.text).toMatch(/\[CARD_NUMBER\]/);
    expect(longestDigitRun(`${final.text} ${final.rawText ?? ''}`)).toBeLessThan(3);
    expect(final.entities ?? []).toEqual([]);
    expect(final.words.map((w: { word: string }) => w.word)).toContain('[CARD_NUMBER]');
    expect(final.redactions).toBeUndefined(); // the socket's final is as the protocol says
    const [seg] = await h.store.listSegments(h.session.transcriptionId);
    expect(seg!.text).toBe(final.text);
    expect(JSON.stringify({ ...seg, startSample: null, endSample: null })).not.toMatch(/\bone one one\b|1111/);
    expect(seg!.annotations?.redactions).toEqual([{ type: 'card_number', startSample: String(3 * FRAME), endSample: String(19 * FRAME) }]);
  });

  it('without alignment, no word times are kept but the redacted span still is', async () => {
    const { h, socket } = await speakCard({ redact: ['numbers'], includeAlignment: false });
    expect(socket.ofType('final')[0]!.text).toBe('My card is [NUMBER] thanks');
    const [seg] = await h.store.listSegments(h.session.transcriptionId);
    expect(seg!.words).toEqual([]);
    expect(seg!.annotations?.redactions).toEqual([{ type: 'number', startSample: String(3 * FRAME), endSample: String(19 * FRAME) }]);
  });

  it('a number said across two segments: the second final and its partials do not complete three digits', async () => {
    const script = ['my', 'card', 'one', 'one', 'one', 'thanks'];
    const engine = new FakeEngine({ samplesPerWord: FRAME, script });
    const h = await liveSession(engine, { redact: ['numbers'] });
    open.push(h);
    const socket = new RecordingSocket();
    await h.session.attach(socket);
    const audio = tone(16000, 0.04);
    for (let i = 0; i < 4; i++) await h.session.onBinary(socket, audioFrame(1, i * FRAME, audio.subarray(0, FRAME)));
    await h.session.onText(socket, JSON.stringify({ type: 'commit' }));
    await socket.until((ev) => ev.filter((e) => e.type === 'committed').length === 1);
    for (let i = 4; i < 6; i++) await h.session.onBinary(socket, audioFrame(1, i * FRAME, audio.subarray(0, FRAME)));
    await h.session.onText(socket, JSON.stringify({ type: 'commit' }));
    await socket.until((ev) => ev.filter((e) => e.type === 'committed').length === 2);
    const finals = socket.ofType('final').map((f) => f.text);
    expect(finals).toEqual(['My card one one', '[NUMBER] thanks']);
    // What a reader of the events in order sees: never three digits in a row.
    const shown = socket.events.filter((e) => e.type === 'final' || (e.type === 'partial' && e.segmentId === 'seg_1')).map((e) => e.text);
    for (let i = 1; i < shown.length; i++)
      expect(longestDigitRun(`${shown[i - 1]} ${shown[i]}`), `${shown[i - 1]} | ${shown[i]}`).toBeLessThan(3);
    const segs = await h.store.listSegments(h.session.transcriptionId);
    expect(longestDigitRun(segs.map((s) => s.text).join(' '))).toBeLessThan(3);
    expect(segs[1]!.annotations?.redactions).toEqual([{ type: 'number', startSample: String(4 * FRAME), endSample: String(5 * FRAME) }]);
  });

  it('Finals.onFinal: each final with its redacted spans, once stored and before it is sent; a failing listener does not keep it back', async () => {
    const engine = new FakeEngine({ samplesPerWord: FRAME, script: CARD });
    const h = await liveSession(engine, { redact: ['numbers'], includeAlignment: false });
    open.push(h);
    const socket = new RecordingSocket();
    const seen: Array<{ redactions: unknown; stored: number; sent: number }> = [];
    const finals = (h.session as unknown as { finals: { onFinal(l: (f: { redactions: unknown }) => unknown): void } }).finals;
    finals.onFinal(async (f) => {
      seen.push({
        redactions: f.redactions,
        stored: (await h.store.listSegments(h.session.transcriptionId)).length,
        sent: socket.ofType('final').length,
      });
    });
    finals.onFinal(() => {
      throw new Error('recorder down');
    });
    await h.session.attach(socket);
    const audio = tone(16000, 0.04);
    for (let i = 0; i < CARD.length; i++) await h.session.onBinary(socket, audioFrame(1, i * FRAME, audio.subarray(0, FRAME)));
    await h.session.onText(socket, JSON.stringify({ type: 'commit' }));
    await socket.until((ev) => ev.some((e) => e.type === 'committed'));
    expect(seen).toEqual([
      { redactions: [{ type: 'number', startSample: String(3 * FRAME), endSample: String(19 * FRAME) }], stored: 1, sent: 0 },
    ]);
    expect(socket.ofType('final')).toHaveLength(1);
  });
});
