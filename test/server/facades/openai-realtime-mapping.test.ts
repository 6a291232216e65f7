// The OpenAI Realtime facade's pure parts: session configuration onto native session options
// (GA session.update and beta transcription_session.update), the client's events read, and
// native events as OpenAI's transcription events.
import { describe, expect, it } from 'vitest';
import {
  applySessionUpdate,
  applyTranscriptionSessionUpdate,
  defaultConfig,
  fixedFieldChanged,
  nativeSessionBody,
  RealtimeConfigError,
  servedRealtimeModels,
} from '../../../src/server/facades/openai/realtime-config.js';
import { readClientEvent, RealtimeMessages, type OutEvent } from '../../../src/server/facades/openai/realtime-messages.js';
import type { ServerEvent } from '../../../src/core/protocol.js';

const models = servedRealtimeModels('pocketsphinx');
const base = defaultConfig('pocketsphinx');
const t = (ms: number) => ({ ms, samples: ms * 16 }) as never;

describe('session configuration', () => {
  it('defaults: pcm16 24 kHz with server VAD', () => {
    expect(nativeSessionBody(base)).toEqual({
      title: 'OpenAI realtime transcription',
      options: { inputEncoding: 'pcm_s16le_24000', segmentCommitMode: 'vad' },
    });
  });

  it('GA session.update: G.711, manual commit, language and prompt', () => {
    const c = applySessionUpdate(
      base,
      {
        type: 'transcription',
        audio: {
          input: {
            format: { type: 'audio/pcmu' },
            turn_detection: null,
            transcription: { model: 'whisper-1', language: 'en', prompt: 'Dashwood, Norland' },
          },
        },
      },
      models,
    );
    expect(nativeSessionBody(c)).toEqual({
      title: 'OpenAI realtime transcription',
      languageHint: 'en',
      options: { inputEncoding: 'mulaw_8000', segmentCommitMode: 'manual', vocabularyHints: ['Dashwood', 'Norland'] },
    });
    expect(
      nativeSessionBody(
        applySessionUpdate(
          base,
          { audio: { input: { format: { type: 'audio/pcma' }, turn_detection: { type: 'server_vad', silence_duration_ms: 800 } } } },
          models,
        ),
      ).options,
    ).toEqual({
      inputEncoding: 'alaw_8000',
      segmentCommitMode: 'vad',
      commitSilenceMs: 800,
    });
  });

  it('beta transcription_session.update', () => {
    const c = applyTranscriptionSessionUpdate(
      base,
      {
        input_audio_format: 'g711_alaw',
        turn_detection: { type: 'semantic_vad', eagerness: 'low' },
        input_audio_transcription: { model: 'gpt-4o-mini-transcribe' },
      },
      models,
    );
    expect(c).toMatchObject({
      format: 'g711_alaw',
      turnDetection: { type: 'semantic_vad', silenceMs: null },
      model: 'gpt-4o-mini-transcribe',
    });
  });

  it('refusals name the parameter', () => {
    const refusal = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(RealtimeConfigError);
        return [(err as RealtimeConfigError).param, (err as RealtimeConfigError).code];
      }
      throw new Error('not refused');
    };
    expect(refusal(() => applySessionUpdate(base, { type: 'realtime' }, models))).toEqual(['session.type', 'invalid_value']);
    expect(refusal(() => applySessionUpdate(base, { audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } }, models))).toEqual([
      'session.audio.input.format.rate',
      'invalid_value',
    ]);
    expect(refusal(() => applySessionUpdate(base, { audio: { input: { transcription: { model: 'whisper-9' } } } }, models))).toEqual([
      'session.audio.input.transcription.model',
      'model_not_found',
    ]);
    expect(refusal(() => applySessionUpdate(base, { audio: { output: {} } }, models))).toEqual([
      'session.audio.output',
      'unknown_parameter',
    ]);
    expect(refusal(() => applyTranscriptionSessionUpdate(base, { input_audio_format: 'opus' }, models))).toEqual([
      'session.input_audio_format',
      'invalid_value',
    ]);
  });

  it('what cannot change once the native session is open', () => {
    expect(fixedFieldChanged(base, { ...base, model: 'whisper-1' })).toBeNull();
    expect(fixedFieldChanged(base, { ...base, format: 'g711_ulaw' })).toBe('format');
    expect(fixedFieldChanged(base, { ...base, turnDetection: null })).toBe('turn_detection');
  });
});

describe('client events', () => {
  it('append carries base64 audio; anything else a transcription session does not take is refused', () => {
    const r = readClientEvent(
      JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.from([1, 2, 3, 4]).toString('base64'), event_id: 'e1' }),
    );
    expect(r).toEqual({ ok: true, event: { type: 'input_audio_buffer.append', audio: Buffer.from([1, 2, 3, 4]), eventId: 'e1' } });
    expect(readClientEvent('{"type":"input_audio_buffer.append","audio":"***"}')).toMatchObject({ ok: false, param: 'audio' });
    expect(readClientEvent('{"type":"response.create"}')).toMatchObject({ ok: false, code: 'invalid_value', param: 'type' });
    expect(readClientEvent('not json')).toMatchObject({ ok: false, code: 'invalid_json' });
  });
});

describe('native events as OpenAI events', () => {
  const partial = (text: string, seg = 'seg_0'): ServerEvent => ({ type: 'partial', segmentId: seg, text, start: t(300), end: t(900) });
  const final = (text: string, trigger: 'vad' | 'commit' = 'vad', seg = 'seg_0'): ServerEvent => ({
    type: 'final',
    segmentId: seg,
    text,
    trigger,
    start: t(300),
    end: t(2300),
  });

  it('server VAD: started at the first words, stable words as deltas, then stopped, committed, completed', () => {
    const m = new RealtimeMessages({ vad: true, itemPrefix: 'x' });
    const types = (evs: OutEvent[]) =>
      evs.map((ev) => {
        const e = ev as Record<string, unknown>;
        return [e.type, e.delta ?? e.transcript ?? e.audio_start_ms ?? e.audio_end_ms ?? null];
      });
    expect(types(m.translate(partial('he was')))).toEqual([['input_audio_buffer.speech_started', 300]]);
    expect(types(m.translate(partial('he was not')))).toEqual([['conversation.item.input_audio_transcription.delta', 'he was']]);
    expect(types(m.translate(partial('he was not an')))).toEqual([['conversation.item.input_audio_transcription.delta', ' not']]);
    const end = m.translate(final('He was not an ill disposed young man.'));
    expect(types(end)).toEqual([
      ['input_audio_buffer.speech_stopped', 2300],
      ['input_audio_buffer.committed', null],
      ['conversation.item.input_audio_transcription.delta', ' an ill disposed young man.'],
      ['conversation.item.input_audio_transcription.completed', 'He was not an ill disposed young man.'],
    ]);
    expect(end[1]).toMatchObject({ item_id: 'item_x_0', previous_item_id: null });
    expect(end[3]).toMatchObject({ item_id: 'item_x_0', content_index: 0, usage: { type: 'duration', seconds: 2 } });
    // The next item follows this one.
    m.translate(partial('unless', 'seg_1'));
    expect(m.translate(final('unless', 'vad', 'seg_1'))[1]).toMatchObject({
      type: 'input_audio_buffer.committed',
      item_id: 'item_x_1',
      previous_item_id: 'item_x_0',
    });
  });

  it('manual commit: committed names the item, no speech events; an empty commit is an error; a cleared segment says nothing', () => {
    const m = new RealtimeMessages({ vad: false, itemPrefix: 'y' });
    expect(m.translate(partial('he was'))).toEqual([]);
    expect(m.translate({ type: 'committed', segmentId: 'seg_0', capturedSamples: '100' })).toMatchObject([
      { type: 'input_audio_buffer.committed', item_id: 'item_y_0' },
    ]);
    expect(m.translate(final('he was', 'commit')).map((e) => e.type)).toEqual([
      'conversation.item.input_audio_transcription.delta',
      'conversation.item.input_audio_transcription.completed',
    ]);
    // The native committed of a segment already final (it may come after the final) says nothing.
    const n = new RealtimeMessages({ vad: false, itemPrefix: 'w' });
    expect(n.translate(final('he was', 'commit')).map((e) => e.type)).toEqual([
      'input_audio_buffer.committed',
      'conversation.item.input_audio_transcription.delta',
      'conversation.item.input_audio_transcription.completed',
    ]);
    expect(n.translate({ type: 'committed', segmentId: 'seg_0', capturedSamples: '100' })).toEqual([]);
    expect(m.translate({ type: 'committed', segmentId: null, capturedSamples: '100' })).toMatchObject([
      { type: 'error', error: { code: 'input_audio_buffer_commit_empty', type: 'invalid_request_error' } },
    ]);
    m.translate(partial('noise', 'seg_1'));
    expect(m.clear()).toMatchObject({ type: 'input_audio_buffer.cleared' });
    expect(m.translate({ type: 'committed', segmentId: 'seg_1', capturedSamples: '200' })).toEqual([]);
    expect(m.translate(final('noise', 'commit', 'seg_1'))).toEqual([]);
  });

  it('a spent balance is an error event', () => {
    const m = new RealtimeMessages({ vad: true, itemPrefix: 'z' });
    expect(m.translate({ type: 'accepting', accepting: false, reason: 'INSUFFICIENT_CHARACTERS' })).toMatchObject([
      { type: 'error', error: { code: 'insufficient_characters' } },
    ]);
  });
});
