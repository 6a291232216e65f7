// The AssemblyAI streaming facade's pure parts: the query mapped onto a native session body
// (acting, ignored and refused parameters), native events as Turns and Termination, and the
// temporary tokens (signed, expiring, tamper-evident). The SDK end to end:
// assemblyai-streaming.test.ts.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mapStreamingQuery, StreamingParamError } from '../../../src/server/facades/assemblyai/streaming/params.js';
import { StreamingMessages } from '../../../src/server/facades/assemblyai/streaming/messages.js';
import { issueToken, verifyToken } from '../../../src/server/facades/assemblyai/streaming/token.js';
import type { ServerEvent } from '../../../src/core/protocol.js';

const at = (ms: number) => ({ sample: String(ms * 16), ms, epoch: 0, epochSample: ms * 16, epochMs: ms });
const refusedParam = (q: Record<string, string>): string => {
  try {
    mapStreamingQuery(q);
  } catch (err) {
    if (err instanceof StreamingParamError) return err.param;
    throw err;
  }
  return 'accepted';
};

describe('the query', () => {
  it('maps what acts onto the native body and accepts what is ignored', () => {
    const r = mapStreamingQuery({
      sample_rate: '8000',
      encoding: 'pcm_mulaw',
      format_turns: 'true',
      max_turn_silence: '900',
      keyterms_prompt: '["Dashwood"," Norland ","Dashwood"]',
      language_code: 'en',
      speech_model: 'universal-streaming-english',
      end_of_turn_confidence_threshold: '0.7',
      min_turn_silence: '160',
      session_heartbeat: 'false',
      token: 'x',
    });
    expect(r).toEqual({
      sessionBody: {
        title: 'AssemblyAI streaming',
        languageHint: 'en',
        options: {
          inputEncoding: 'mulaw_8000',
          segmentCommitMode: 'vad',
          readableText: true,
          commitSilenceMs: 900,
          vocabularyHints: ['Dashwood', 'Norland'],
        },
      },
      sampleRate: 8000,
      bytesPerSample: 1,
      formatTurns: true,
    });
    expect(mapStreamingQuery({ sample_rate: '16000' }).sessionBody.options).toEqual({
      inputEncoding: 'pcm_s16le_16000',
      segmentCommitMode: 'vad',
      readableText: false,
    });
  });

  it('refuses naming the parameter: a rate or encoding not served, output not made, unknown names', () => {
    expect(refusedParam({})).toBe('sample_rate');
    expect(refusedParam({ sample_rate: '11025' })).toBe('sample_rate');
    expect(refusedParam({ sample_rate: '16000', encoding: 'pcm_mulaw' })).toBe('sample_rate');
    expect(refusedParam({ sample_rate: '16000', encoding: 'opus' })).toBe('encoding');
    expect(refusedParam({ sample_rate: '16000', speaker_labels: 'true' })).toBe('speaker_labels');
    expect(refusedParam({ sample_rate: '16000', speaker_labels: 'false' })).toBe('accepted');
    expect(refusedParam({ sample_rate: '16000', webhook_url: 'https://example.com' })).toBe('webhook_url');
    expect(refusedParam({ sample_rate: '16000', language_codes: '["en","es"]' })).toBe('language_codes');
    expect(refusedParam({ sample_rate: '16000', keyterms_prompt: 'Dashwood' })).toBe('keyterms_prompt');
    expect(refusedParam({ sample_rate: '16000', key: 'sk_x' })).toBe('key');
  });
});

describe('the messages', () => {
  it('partials are Turns whose transcript is the words two partials agreed on; the final ends the turn, formatted after', () => {
    const m = new StreamingMessages({ formatTurns: true, sampleRate: 16000 });
    const partial = (text: string, end: number): ServerEvent => ({ type: 'partial', segmentId: 'seg_1', text, start: at(0), end: at(end) });
    const [a] = m.translate(partial('he was', 400)) as any[];
    expect(a).toMatchObject({ type: 'Turn', turn_order: 0, end_of_turn: false, transcript: '' });
    expect(a.words).toEqual([
      { start: 0, end: 200, text: 'he', confidence: 0, word_is_final: false },
      { start: 200, end: 400, text: 'was', confidence: 0, word_is_final: false },
    ]);
    const [b] = m.translate(partial('he was not', 600)) as any[];
    expect(b.transcript).toBe('he was');
    expect(b.words.map((w: any) => w.word_is_final)).toEqual([true, true, false]);
    const out = m.translate({
      type: 'final',
      segmentId: 'seg_1',
      text: 'He was not.',
      rawText: 'he was not',
      trigger: 'vad',
      start: at(0),
      end: at(700),
      words: [
        { word: 'He', confidence: 0.9, start: at(10), end: at(200) },
        { word: 'was', confidence: 0.8, start: at(200), end: at(400) },
        { word: 'not.', confidence: null, start: at(400), end: at(650) },
      ],
    }) as any[];
    expect(out.map((t) => [t.turn_order, t.end_of_turn, t.turn_is_formatted, t.transcript])).toEqual([
      [0, true, false, 'he was not'],
      [0, true, true, 'He was not.'],
    ]);
    expect(out[0].words[2]).toEqual({ start: 400, end: 650, text: 'not.', confidence: 0, word_is_final: true });
    // The next segment is the next turn; a silent segment is none.
    expect(m.translate({ type: 'final', segmentId: 'seg_2', text: '', trigger: 'vad', start: at(700), end: at(900) })).toEqual([]);
    const next = m.translate({ type: 'partial', segmentId: 'seg_3', text: 'again', start: at(900), end: at(1000) }) as any[];
    expect(next[0].turn_order).toBe(1);
    expect(m.termination({ type: 'closed', status: 'COMPLETED', capturedSamples: '120000', segments: 3 }, 9400)).toEqual({
      type: 'Termination',
      audio_duration_seconds: 8,
      session_duration_seconds: 9,
    });
  });
});

describe('temporary tokens', () => {
  const key = randomBytes(32);
  const now = new Date('2026-12-07T12:00:00Z');

  it('verify with the key that signed them until they expire; a changed byte or another key is invalid', () => {
    const token = issueToken(key, 'acc_1', 60, 600, now);
    const ok = verifyToken(key, token, new Date(now.getTime() + 59_000));
    expect(ok).toMatchObject({ ok: true, claims: { accountId: 'acc_1', maxSessionSeconds: 600 } });
    expect(verifyToken(key, token, new Date(now.getTime() + 60_000))).toEqual({ ok: false, reason: 'expired' });
    expect(verifyToken(randomBytes(32), token, now)).toEqual({ ok: false, reason: 'invalid' });
    const [payload, mac] = token.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ ...(ok.ok ? ok.claims : {}), accountId: 'acc_2' })).toString('base64url');
    expect(verifyToken(key, `${forged}.${mac}`, now)).toEqual({ ok: false, reason: 'invalid' });
    expect(verifyToken(key, `${payload}.${mac.slice(0, -2)}`, now)).toEqual({ ok: false, reason: 'invalid' });
    expect(verifyToken(key, 'x'.repeat(2000), now)).toEqual({ ok: false, reason: 'invalid' });
    // Each token has its own id (the single-use key of the session it opens).
    const other = verifyToken(key, issueToken(key, 'acc_1', 60, 600, now), now);
    expect(other.ok && ok.ok && other.claims.id !== ok.claims.id).toBe(true);
  });
});
