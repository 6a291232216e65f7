// The live socket's pure parts: Deepgram's live query as a native session body
// (live-params.ts) and a native session's events as Deepgram's live messages
// (live-messages.ts).
import { describe, expect, it } from 'vitest';
import { validateCreateSession } from '../../../src/core/session-options.js';
import { mapLiveQuery } from '../../../src/server/facades/deepgram/live-params.js';
import { LIVE_ACTING, LIVE_IGNORED, LIVE_REFUSED } from '../../../src/server/facades/deepgram/parameters.js';
import { DeepgramLiveMessages, streamMetadata } from '../../../src/server/facades/deepgram/live-messages.js';
import { ChannelSplitter } from '../../../src/server/facades/deepgram/live-channels.js';
import { DeepgramError } from '../../../src/server/facades/deepgram/errors.js';
import { serverEvent, type TimePoint } from '../../../src/core/protocol.js';

function refusal(q: Record<string, string>): string {
  try {
    mapLiveQuery(q);
  } catch (err) {
    expect(err).toBeInstanceOf(DeepgramError);
    expect((err as DeepgramError).status).toBe(400);
    expect((err as DeepgramError).errCode).toBe('INVALID_QUERY_PARAMETER');
    return (err as Error).message;
  }
  throw new Error('not refused');
}

describe('mapLiveQuery', () => {
  it('maps the acting parameters onto a body the native create accepts', () => {
    const r = mapLiveQuery({
      encoding: 'linear16',
      sample_rate: '16000',
      channels: '1',
      interim_results: 'true',
      endpointing: '300',
      utterance_end_ms: '1000',
      vad_events: 'true',
      smart_format: 'true',
      keywords: ['refund:2', 'invoice'],
      keyterm: 'Acme',
      language: 'en',
      model: 'nova-3',
      tag: ['a', 'b'],
    });
    expect(r).toMatchObject({
      sampleRate: 16000,
      bytesPerSample: 2,
      interimResults: true,
      utteranceEndMs: 1000,
      vadEvents: true,
      model: 'nova-3',
    });
    expect(r.sessionBody).toEqual({
      title: 'Deepgram live: a, b',
      languageHint: 'en',
      options: {
        inputEncoding: 'pcm_s16le_16000',
        segmentCommitMode: 'vad',
        commitSilenceMs: 300,
        readableText: true,
        removeDisfluencies: true,
        vocabularyHints: ['refund', 'invoice', 'Acme'],
      },
    });
    const valid = validateCreateSession(r.sessionBody);
    expect(valid.effectiveOptions).toMatchObject({ inputEncoding: 'pcm_s16le_16000', segmentCommitMode: 'vad', commitSilenceMs: 300 });
  });

  it('defaults: vad with the native silence, no interim, plain text, fillers removed; endpointing=false is manual', () => {
    const r = mapLiveQuery({ encoding: 'mulaw', sample_rate: '8000' });
    expect(r).toMatchObject({ bytesPerSample: 1, interimResults: false, utteranceEndMs: null, vadEvents: false, model: null });
    expect(r.sessionBody).toEqual({
      title: 'Deepgram live',
      options: { inputEncoding: 'mulaw_8000', segmentCommitMode: 'vad', readableText: false, removeDisfluencies: true },
    });
    expect(
      mapLiveQuery({ encoding: 'mulaw', sample_rate: '8000', endpointing: 'false', filler_words: 'true' }).sessionBody.options,
    ).toEqual({ inputEncoding: 'mulaw_8000', segmentCommitMode: 'manual', readableText: false });
  });

  it('accepts a refused yes/no feature switched off (every value false), as frameworks send every switch; refuses it on, and a valued one either way', () => {
    const off = { encoding: 'mulaw', sample_rate: '8000', dictation: 'false', diarize: 'False', profanity_filter: ['false', 'false'] };
    expect(mapLiveQuery(off).sessionBody).toEqual(mapLiveQuery({ encoding: 'mulaw', sample_rate: '8000' }).sessionBody);
    expect(refusal({ encoding: 'mulaw', sample_rate: '8000', dictation: 'true' })).toMatch(/^dictation: not supported/);
    expect(() => mapLiveQuery({ encoding: 'mulaw', sample_rate: '8000', profanity_filter: ['false', 'true'] })).toThrow(
      /^profanity_filter: not supported/,
    );
    expect(refusal({ encoding: 'mulaw', sample_rate: '8000', search: 'false' })).toMatch(/^search: not supported/);
  });

  it('refuses, naming the parameter: refused, unknown, and audio the live socket does not take', () => {
    expect(refusal({ encoding: 'mulaw', sample_rate: '8000', diarize: 'true' })).toMatch(/^diarize: not supported/);
    expect(refusal({ encoding: 'mulaw', sample_rate: '8000', multichannel: 'true' })).toMatch(/^multichannel: /);
    expect(refusal({ encoding: 'mulaw', sample_rate: '8000', redact: 'pii' })).toMatch(/^redact: "pii" is not served/);
    expect(refusal({ encoding: 'mulaw', sample_rate: '8000', frobnicate: '1' })).toMatch(/^frobnicate: unknown/);
    expect(refusal({ encoding: 'mulaw', sample_rate: '8000', token: 'sk_x' })).toMatch(/^token: unknown/);
    expect(refusal({ sample_rate: '8000' })).toMatch(/^encoding: required/);
    expect(refusal({ encoding: 'alaw', sample_rate: '16000' })).toMatch(/^sample_rate: 16000 is not served for alaw/);
    expect(refusal({ encoding: 'opus', sample_rate: '48000' })).toMatch(/^encoding: /);
    expect(refusal({ encoding: 'mulaw', sample_rate: '16000' })).toMatch(/^sample_rate: 16000 is not served for mulaw/);
    expect(refusal({ encoding: 'linear16', sample_rate: '11025' })).toMatch(/^sample_rate: /);
    expect(refusal({ encoding: 'linear16' })).toMatch(/^sample_rate: required/);
    expect(refusal({ encoding: 'linear16', sample_rate: '16000', channels: '2' })).toMatch(
      /^channels: 2 channels are served with multichannel=true/,
    );
    expect(refusal({ encoding: 'linear16', sample_rate: '16000', channels: '2', multichannel: 'false' })).toMatch(/^channels: /);
    expect(refusal({ encoding: 'linear16', sample_rate: '16000', channels: '3', multichannel: 'true' })).toMatch(/^channels: at most 2/);
    expect(refusal({ encoding: 'linear16', sample_rate: '16000', channels: '1', multichannel: 'true' })).toMatch(
      /^multichannel: needs channels=2/,
    );
    expect(refusal({ encoding: 'linear16', sample_rate: '16000', endpointing: 'soon' })).toMatch(/^endpointing: /);
    expect(refusal({ encoding: 'linear16', sample_rate: '16000', utterance_end_ms: '500' })).toMatch(/^utterance_end_ms: /);
    expect(refusal({ encoding: 'linear16', sample_rate: '16000', interim_results: 'yes' })).toMatch(/^interim_results: /);
  });

  it('alaw is the native alaw_8000; channels=2 with multichannel=true is two channels of the same encoding', () => {
    const alaw = mapLiveQuery({ encoding: 'alaw', sample_rate: '8000' });
    expect(alaw).toMatchObject({ bytesPerSample: 1, channels: 1 });
    expect(validateCreateSession(alaw.sessionBody).effectiveOptions.inputEncoding).toBe('alaw_8000');
    const stereo = mapLiveQuery({ encoding: 'linear16', sample_rate: '16000', channels: '2', multichannel: 'true', tag: 'crm' });
    expect(stereo).toMatchObject({ bytesPerSample: 2, channels: 2, sampleRate: 16000 });
    expect(stereo.sessionBody).toMatchObject({ title: 'Deepgram live: crm', options: { inputEncoding: 'pcm_s16le_16000' } });
    expect(mapLiveQuery({ encoding: 'mulaw', sample_rate: '8000', multichannel: 'false' }).channels).toBe(1);
  });

  it('each parameter is in exactly one live list', () => {
    const names = [...Object.keys(LIVE_ACTING), ...Object.keys(LIVE_IGNORED), ...Object.keys(LIVE_REFUSED)];
    expect(new Set(names).size).toBe(names.length);
  });
});

const at = (ms: number): TimePoint => ({ sample: String(ms * 8), ms, epoch: 1, epochSample: ms * 8, epochMs: ms });
const word = (w: string, s: number, e: number, confidence: number | null = 0.9) => ({ word: w, confidence, start: at(s), end: at(e) });
const ack = (samples: number) => serverEvent.ack({ epoch: 1, sampleOffset: samples, capturedSamples: String(samples) });

function messages(over: Partial<ConstructorParameters<typeof DeepgramLiveMessages>[0]> = {}) {
  return new DeepgramLiveMessages({
    requestId: 'req-1',
    transcriptionId: 'stt_1',
    created: '2026-11-28T06:00:00.000Z',
    sampleRate: 8000,
    modelName: 'scribed-pocketsphinx',
    interimResults: true,
    vadEvents: true,
    utteranceEndMs: 1000,
    ...over,
  });
}

describe('DeepgramLiveMessages', () => {
  it('partials are interim Results (once per text), finals are final Results with words; SpeechStarted opens a segment', () => {
    const m = messages();
    expect(m.translate(serverEvent.partial({ segmentId: 'seg_0', text: '', start: at(0), end: at(200) }))).toEqual([]);
    const first = m.translate(serverEvent.partial({ segmentId: 'seg_0', text: 'he was', start: at(100), end: at(700) }));
    expect(first.map((x) => x.type)).toEqual(['SpeechStarted', 'Results']);
    expect(first[0]).toEqual({ type: 'SpeechStarted', channel: [0, 1], timestamp: 0.1 });
    expect(first[1]).toMatchObject({
      type: 'Results',
      channel_index: [0, 1],
      start: 0.1,
      duration: 0.6,
      is_final: false,
      speech_final: false,
      from_finalize: false,
      metadata: { request_id: 'req-1' },
    });
    expect((first[1] as any).channel.alternatives[0]).toEqual({
      transcript: 'he was',
      confidence: 0,
      words: [
        { word: 'he', start: 0.1, end: 0.4, confidence: 0, punctuated_word: 'he' },
        { word: 'was', start: 0.4, end: 0.7, confidence: 0, punctuated_word: 'was' },
      ],
    });
    expect(m.translate(serverEvent.partial({ segmentId: 'seg_0', text: 'he was', start: at(100), end: at(900) }))).toEqual([]);
    const fin = m.translate(
      serverEvent.final({
        segmentId: 'seg_0',
        text: 'He was 12',
        trigger: 'vad',
        start: at(100),
        end: at(1500),
        words: [word('He', 100, 300, 0.8), word('was', 300, 700, null), word('12', 700, 1400, 0.6)],
      }),
    );
    expect(fin).toHaveLength(1);
    expect(fin[0]).toMatchObject({ is_final: true, speech_final: true, from_finalize: false, start: 0.1, duration: 1.4 });
    expect((fin[0] as any).channel.alternatives[0]).toEqual({
      transcript: 'He was 12',
      confidence: 0.467,
      words: [
        { word: 'he', start: 0.1, end: 0.3, confidence: 0.8, punctuated_word: 'He' },
        { word: 'was', start: 0.3, end: 0.7, confidence: 0, punctuated_word: 'was' },
        { word: '12', start: 0.7, end: 1.4, confidence: 0.6, punctuated_word: '12' },
      ],
    });
  });

  it('a commit (Finalize) is from_finalize; a close is speech_final; without interim_results partials are not sent', () => {
    const m = messages({ interimResults: false, vadEvents: false });
    expect(m.translate(serverEvent.partial({ segmentId: 'seg_0', text: 'he', start: at(0), end: at(300) }))).toEqual([]);
    expect(
      m.translate(
        serverEvent.final({ segmentId: 'seg_0', text: 'he', trigger: 'commit', start: at(0), end: at(300), words: [word('he', 0, 300)] }),
      )[0],
    ).toMatchObject({ is_final: true, from_finalize: true, speech_final: false });
    expect(
      m.translate(
        serverEvent.final({
          segmentId: 'seg_1',
          text: 'was',
          trigger: 'close',
          start: at(300),
          end: at(600),
          words: [word('was', 300, 600)],
        }),
      )[0],
    ).toMatchObject({ from_finalize: false, speech_final: true });
  });

  it('UtteranceEnd once the audio passed the last final word by utterance_end_ms with no new speech', () => {
    const m = messages();
    m.translate(
      serverEvent.final({ segmentId: 'seg_0', text: 'he', trigger: 'vad', start: at(0), end: at(900), words: [word('he', 100, 500)] }),
    );
    expect(m.translate(ack(8 * 1400))).toEqual([]);
    expect(m.translate(ack(8 * 1500))).toEqual([{ type: 'UtteranceEnd', channel: [0, 1], last_word_end: 0.5 }]);
    expect(m.translate(ack(8 * 3000))).toEqual([]);
    // New speech before the gap passed: no UtteranceEnd for the words before it.
    m.translate(
      serverEvent.final({
        segmentId: 'seg_1',
        text: 'was',
        trigger: 'vad',
        start: at(3000),
        end: at(3600),
        words: [word('was', 3100, 3500)],
      }),
    );
    m.translate(serverEvent.partial({ segmentId: 'seg_2', text: 'not', start: at(3700), end: at(4000) }));
    expect(m.translate(ack(8 * 5000))).toEqual([]);
  });

  it('Metadata when the stream closes; acks, ready, notices are consumed; errors named', () => {
    const m = messages({ utteranceEndMs: null });
    expect(m.translate(ack(4000))).toEqual([]);
    expect(m.translate(serverEvent.notice({ code: 'RECOGNITION_DEFERRED', message: 'x' }))).toEqual([]);
    expect(m.translate(serverEvent.error({ code: 'NOT_ACCEPTING', message: 'NOT_ACCEPTING: stop', fatal: false }))).toEqual([
      { type: 'Error', err_code: 'NOT_ACCEPTING', err_msg: 'NOT_ACCEPTING: stop', request_id: 'req-1' },
    ]);
    expect(m.translate(serverEvent.accepting({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }))).toMatchObject([
      { type: 'Error', err_code: 'INSUFFICIENT_CHARACTERS' },
    ]);
    expect(m.translate(serverEvent.accepting({ accepting: true }))).toEqual([]);
    expect(m.translate(serverEvent.closed({ status: 'COMPLETED', capturedSamples: '12000', segments: 1 }))).toEqual([
      {
        type: 'Metadata',
        transaction_key: 'deprecated',
        request_id: 'req-1',
        sha256: '',
        created: '2026-11-28T06:00:00.000Z',
        duration: 1.5,
        channels: 1,
        models: ['scribed-pocketsphinx'],
        model_info: { 'scribed-pocketsphinx': { name: 'scribed-pocketsphinx', version: 'scribed', arch: 'scribed-pocketsphinx' } },
        transcription_ids: ['stt_1'],
      },
    ]);
  });
});

describe('ChannelSplitter', () => {
  it('mono: whole samples only, a split sample waits for the next message', () => {
    const s = new ChannelSplitter(2, 1);
    expect(s.push(Buffer.from([1, 2, 3]))).toEqual([Buffer.from([1, 2])]);
    expect(s.push(Buffer.from([4, 5, 6]))).toEqual([Buffer.from([3, 4, 5, 6])]);
  });

  it('two channels of linear16: interleaved frames split per channel, across odd message boundaries', () => {
    const s = new ChannelSplitter(2, 2);
    // L0 R0 L1 R1 as little-endian 16-bit samples, sent 3 bytes then 5.
    const frames = Buffer.from([0x01, 0x00, 0x02, 0x00, 0x03, 0x00, 0x04, 0x00]);
    const a = s.push(frames.subarray(0, 3));
    expect(a.map((b) => b.length)).toEqual([0, 0]);
    const b = s.push(frames.subarray(3));
    expect(b).toEqual([Buffer.from([0x01, 0x00, 0x03, 0x00]), Buffer.from([0x02, 0x00, 0x04, 0x00])]);
  });

  it('two channels of G.711 bytes', () => {
    const s = new ChannelSplitter(1, 2);
    expect(s.push(Buffer.from([10, 20, 11, 21, 12]))).toEqual([Buffer.from([10, 11]), Buffer.from([20, 21])]);
    expect(s.push(Buffer.from([22]))).toEqual([Buffer.from([12]), Buffer.from([22])]);
  });
});

describe('two channels: messages per channel, one Metadata', () => {
  it('Results, SpeechStarted and UtteranceEnd carry [i, 2]; closed sends no Metadata per channel; streamMetadata names both rows', () => {
    const left = messages({ channel: [0, 2] });
    const right = messages({ channel: [1, 2], transcriptionId: 'stt_2' });
    const out = right.translate(
      serverEvent.final({
        segmentId: 's1',
        start: at(100),
        end: at(700),
        text: 'refund',
        trigger: 'vad',
        words: [word('refund', 100, 600)],
      }),
    );
    expect(out.find((m) => m.type === 'SpeechStarted')).toMatchObject({ channel: [1, 2] });
    expect(out.find((m) => m.type === 'Results')).toMatchObject({ channel_index: [1, 2], is_final: true });
    expect(right.translate(ack(8 * 1000))).toEqual([]);
    expect(right.translate(serverEvent.closed({ status: 'COMPLETED', capturedSamples: '24000', segments: 1 }))).toEqual([
      { type: 'UtteranceEnd', channel: [1, 2], last_word_end: 0.6 },
    ]);
    expect(left.translate(serverEvent.closed({ status: 'COMPLETED', capturedSamples: '16000', segments: 0 }))).toEqual([]);
    expect(streamMetadata([left, right])).toMatchObject({
      type: 'Metadata',
      request_id: 'req-1',
      channels: 2,
      duration: 3,
      transcription_ids: ['stt_1', 'stt_2'],
    });
  });
});
