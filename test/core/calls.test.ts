// The pure calls core: body and field validation, the idempotency hashes, status from legs,
// the list's query, and the merged transcript in the four formats.
import { describe, expect, it } from 'vitest';
import {
  MAX_EXTERNAL_ID_CHARS,
  callRequestHash,
  callStatus,
  callTranscriptSrt,
  callTranscriptText,
  callTranscriptVtt,
  decodeCallCursor,
  encodeCallCursor,
  mergeCallTranscript,
  parseCallListQuery,
  parseTranscriptFormat,
  sessionRequestHashWithCall,
  splitSessionCallFields,
  validateCreateCall,
  type CallLegTranscript,
  type LegStatus,
} from '../../src/core/calls.js';
import { ScribedError } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import type { TranscriptSegment } from '../../src/core/transcript.js';

const CALL = newId('call', 1_700_000_000_000);

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ScribedError);
    return (err as ScribedError).message;
  }
  throw new Error('expected a refusal');
}

describe('validateCreateCall', () => {
  it('defaults the title and externalId, keeps what is given', () => {
    expect(validateCreateCall(undefined)).toEqual({ title: 'Untitled call', externalId: null, agentId: null });
    expect(validateCreateCall({ title: '', externalId: null })).toEqual({ title: 'Untitled call', externalId: null, agentId: null });
    expect(validateCreateCall({ title: 'Line 4', externalId: 'CA5e2b', agentId: 'agent-7' })).toEqual({
      title: 'Line 4',
      externalId: 'CA5e2b',
      agentId: 'agent-7',
    });
    expect(validateCreateCall({ externalId: 'x'.repeat(MAX_EXTERNAL_ID_CHARS) }).externalId).toHaveLength(MAX_EXTERNAL_ID_CHARS);
    expect(validateCreateCall({ externalId: '😀'.repeat(MAX_EXTERNAL_ID_CHARS) }).externalId).toBe('😀'.repeat(MAX_EXTERNAL_ID_CHARS));
  });

  it('refuses with the field named', () => {
    expect(refusal(() => validateCreateCall([]))).toMatch(/^VALIDATION_FAILED: body: /);
    expect(refusal(() => validateCreateCall({ externalId: '' }))).toMatch(/^VALIDATION_FAILED: externalId: must be 1 to 128/);
    expect(refusal(() => validateCreateCall({ agentId: 'a\nb' }))).toMatch(/^VALIDATION_FAILED: agentId: /);
    expect(refusal(() => validateCreateCall({ externalId: 'x'.repeat(129) }))).toMatch(/^VALIDATION_FAILED: externalId: /);
    expect(refusal(() => validateCreateCall({ externalId: 'a\tb' }))).toMatch(/^VALIDATION_FAILED: externalId: must not contain control/);
    expect(refusal(() => validateCreateCall({ externalId: 7 }))).toMatch(/^VALIDATION_FAILED: externalId: must be a string/);
    expect(refusal(() => validateCreateCall({ title: 3 }))).toMatch(/^VALIDATION_FAILED: title: /);
    expect(refusal(() => validateCreateCall({ title: 'x'.repeat(201) }))).toMatch(/^VALIDATION_FAILED: title: must be at most 200/);
    expect(refusal(() => validateCreateCall({ callId: CALL }))).toMatch(/^VALIDATION_FAILED: callId: unknown field/);
  });

  it('hashes the normalised request: an absent title is the default title, another externalId differs', () => {
    expect(callRequestHash(validateCreateCall({}))).toBe(callRequestHash(validateCreateCall({ title: 'Untitled call' })));
    expect(callRequestHash(validateCreateCall({ externalId: 'a' }))).not.toBe(callRequestHash(validateCreateCall({ externalId: 'b' })));
  });
});

describe('the create-session call fields', () => {
  it('splits callId and speaker from the rest of the body', () => {
    expect(splitSessionCallFields({ title: 't', options: {}, callId: CALL, speaker: 'agent' })).toEqual({
      session: { title: 't', options: {} },
      call: { callId: CALL, speaker: 'agent' },
    });
    expect(splitSessionCallFields({ title: 't', callId: null, speaker: null })).toEqual({ session: { title: 't' }, call: null });
    // Not an object: passed on as it is, for the session validator to refuse.
    expect(splitSessionCallFields('x')).toEqual({ session: 'x', call: null });
  });

  it('wants both or neither, a call id and a speaker label', () => {
    expect(refusal(() => splitSessionCallFields({ callId: CALL }))).toMatch(/^VALIDATION_FAILED: speaker: is required with callId/);
    expect(refusal(() => splitSessionCallFields({ speaker: 'agent' }))).toMatch(/^VALIDATION_FAILED: callId: is required with speaker/);
    expect(refusal(() => splitSessionCallFields({ callId: newId('rts', 1), speaker: 'agent' }))).toMatch(
      /^VALIDATION_FAILED: callId: must be a call id/,
    );
    for (const speaker of ['', '-a', '.a', 'a b', 'a'.repeat(33), 'agent:1', 5]) {
      expect(refusal(() => splitSessionCallFields({ callId: CALL, speaker }))).toMatch(/^VALIDATION_FAILED: speaker: must match/);
    }
    for (const speaker of ['agent', 'customer', 'inbound', 'SIP-1.leg_2', 'a'.repeat(32), '0']) {
      expect(splitSessionCallFields({ callId: CALL, speaker }).call?.speaker).toBe(speaker);
    }
  });

  it('keeps a plain session hash unchanged and makes the call fields part of a leg hash', () => {
    expect(sessionRequestHashWithCall('abc', null)).toBe('abc');
    const agent = sessionRequestHashWithCall('abc', { callId: CALL, speaker: 'agent' });
    expect(agent).toMatch(/^[0-9a-f]{64}$/);
    expect(sessionRequestHashWithCall('abc', { callId: CALL, speaker: 'agent' })).toBe(agent);
    expect(sessionRequestHashWithCall('abc', { callId: CALL, speaker: 'customer' })).not.toBe(agent);
    expect(sessionRequestHashWithCall('abd', { callId: CALL, speaker: 'agent' })).not.toBe(agent);
    expect(sessionRequestHashWithCall('abc', { callId: newId('call', 2), speaker: 'agent' })).not.toBe(agent);
  });
});

describe('callStatus', () => {
  const legs = (...s: LegStatus[]) => s.map((status) => ({ status }));
  it('follows the legs: waiting, active while one records or pauses, then processing, failed, completed', () => {
    expect(callStatus([])).toBe('WAITING');
    expect(callStatus(legs('RECORDING', 'COMPLETED'))).toBe('ACTIVE');
    expect(callStatus(legs('COMPLETED', 'PAUSED'))).toBe('ACTIVE');
    expect(callStatus(legs('PROCESSING', 'FAILED'))).toBe('PROCESSING');
    expect(callStatus(legs('COMPLETED', 'FAILED'))).toBe('FAILED');
    expect(callStatus(legs('COMPLETED', 'COMPLETED'))).toBe('COMPLETED');
  });
});

describe('the list query', () => {
  it('defaults, bounds and cursors', () => {
    expect(parseCallListQuery({})).toEqual({ limit: 20 });
    expect(parseCallListQuery({ limit: '100', externalId: 'CA1' })).toEqual({ limit: 100, externalId: 'CA1' });
    const cursor = encodeCallCursor({ createdAt: '2025-01-01T00:00:00.000Z', id: CALL });
    expect(parseCallListQuery({ cursor })).toEqual({ limit: 20, after: { createdAt: '2025-01-01T00:00:00.000Z', id: CALL } });
    expect(decodeCallCursor(cursor).id).toBe(CALL);
    for (const limit of ['0', '101', '1.5', 'ten'])
      expect(refusal(() => parseCallListQuery({ limit }))).toMatch(/^VALIDATION_FAILED: limit: /);
    expect(refusal(() => parseCallListQuery({ externalId: ['a', 'b'] }))).toMatch(/^VALIDATION_FAILED: externalId: /);
    // A History cursor (an stt_ id) is not a call cursor.
    const history = Buffer.from(JSON.stringify(['2025-01-01T00:00:00.000Z', newId('stt', 1)])).toString('base64url');
    for (const bad of [history, 'zzz', ''])
      if (bad) expect(refusal(() => parseCallListQuery({ cursor: bad }))).toMatch(/^VALIDATION_FAILED: cursor: /);
  });

  it('takes the four transcript formats only', () => {
    expect(parseTranscriptFormat(undefined)).toBe('json');
    for (const f of ['json', 'txt', 'srt', 'vtt']) expect(parseTranscriptFormat(f)).toBe(f);
    expect(refusal(() => parseTranscriptFormat('pdf'))).toMatch(/^VALIDATION_FAILED: format: must be one of json, txt, srt, vtt/);
  });
});

describe('the merged transcript', () => {
  function seg(index: number, startMs: number, endMs: number, text: string, rate: number): TranscriptSegment {
    const s = (ms: number) => BigInt((ms * rate) / 1000);
    return {
      index,
      startSample: s(startMs),
      endSample: s(endMs),
      text,
      words: [{ word: text.split(' ')[0] ?? '', startSample: String(s(startMs)), endSample: String(s(startMs + 100)), confidence: 0.9 }],
    };
  }
  // The agent at 16 kHz, the customer at 8 kHz: times line up in ms whatever the rates.
  const agent: CallLegTranscript = {
    speaker: 'agent',
    meta: { transcriptionId: 'stt_a', title: 'c', status: 'COMPLETED', sampleRateHz: 16000, audioSamples: 16000n * 12n },
    segments: [seg(1, 9000, 11000, 'anything else', 16000), seg(0, 0, 2500, 'hello how can I help', 16000)],
  };
  const customer: CallLegTranscript = {
    speaker: 'customer',
    meta: { transcriptionId: 'stt_c', title: 'c', status: 'RECORDING', sampleRateHz: 8000, audioSamples: 8000n * 8n },
    segments: [
      seg(0, 3120, 7000, 'my order is late\nagain', 8000),
      seg(1, 7500, 7600, '  ', 8000),
      seg(2, 9000, 9500, 'no & <thanks>', 8000),
    ],
  };
  const meta = { callId: CALL, externalId: 'CA1', title: 'Order', status: 'ACTIVE' };
  const merged = mergeCallTranscript(meta, [agent, customer]);

  it("orders every leg's segments by start time, ties by leg order, and labels each", () => {
    expect(merged.segments.map((s) => [s.speaker, s.startMs, s.transcriptionId])).toEqual([
      ['agent', 0, 'stt_a'],
      ['customer', 3120, 'stt_c'],
      ['customer', 7500, 'stt_c'],
      ['agent', 9000, 'stt_a'],
      ['customer', 9000, 'stt_c'],
    ]);
    expect(merged).toMatchObject({ ...meta, durationMs: 12000 });
    expect(merged.legs).toEqual([
      { speaker: 'agent', transcriptionId: 'stt_a', status: 'COMPLETED', sampleRateHz: 16000, durationMs: 12000 },
      { speaker: 'customer', transcriptionId: 'stt_c', status: 'RECORDING', sampleRateHz: 8000, durationMs: 9500 },
    ]);
    expect(merged.segments[1]?.words[0]).toEqual({ word: 'my', startMs: 3120, endMs: 3220, confidence: 0.9 });
    expect(mergeCallTranscript(meta, []).segments).toEqual([]);
  });

  it('renders txt as [time] speaker: text, one line per spoken segment', () => {
    expect(callTranscriptText(merged)).toBe(
      [
        '[00:00:00.000] agent: hello how can I help',
        '[00:00:03.120] customer: my order is late again',
        '[00:00:09.000] agent: anything else',
        '[00:00:09.000] customer: no & <thanks>',
        '',
      ].join('\n'),
    );
  });

  it('renders srt and vtt cues with the speaker first', () => {
    expect(callTranscriptSrt(merged)).toBe(
      '1\n00:00:00,000 --> 00:00:02,500\nagent: hello how can I help\n\n2\n00:00:03,120 --> 00:00:07,000\ncustomer: my order is late again\n\n' +
        '3\n00:00:09,000 --> 00:00:11,000\nagent: anything else\n\n4\n00:00:09,000 --> 00:00:09,500\ncustomer: no & <thanks>\n',
    );
    const vtt = callTranscriptVtt(merged);
    expect(vtt.startsWith('WEBVTT\n\n00:00:00.000 --> 00:00:02.500\nagent: hello how can I help\n')).toBe(true);
    expect(vtt).toContain('00:00:09.000 --> 00:00:09.500\ncustomer: no &amp; &lt;thanks&gt;\n');
  });
});
