// The facades' pure mappings: Deepgram's query and OpenAI's form fields onto native batch
// fields, every parameter in exactly one list, refusals naming what they refuse; the WAV
// header given to headerless audio (read back by ffprobe).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mapListenQuery } from '../../../src/server/facades/deepgram/options.js';
import { ACTING, IGNORED, REFUSED } from '../../../src/server/facades/deepgram/parameters.js';
import { wavHeader, wavSizes } from '../../../src/server/facades/deepgram/raw-audio.js';
import { DeepgramError } from '../../../src/server/facades/deepgram/errors.js';
import { mapTranscriptionRequest, promptTerms } from '../../../src/server/facades/openai/request.js';
import { OpenAiError } from '../../../src/server/facades/openai/errors.js';
import { languageName } from '../../../src/server/facades/openai/response.js';
import { probeAudio } from '../../../src/batch/audio.js';
import { tempDir } from '../../helpers/service.js';

const MODELS = ['scribed-pocketsphinx', 'whisper-1'];

function refusal(fn: () => unknown): DeepgramError & OpenAiError {
  try {
    fn();
  } catch (err) {
    return err as DeepgramError & OpenAiError;
  }
  throw new Error('not refused');
}

describe('Deepgram query', () => {
  it('puts every parameter in exactly one list', () => {
    const lists = [Object.keys(ACTING), Object.keys(IGNORED), Object.keys(REFUSED)];
    const all = lists.flat();
    expect(new Set(all).size).toBe(all.length);
  });

  it('maps the acting parameters onto native fields', () => {
    const r = mapListenQuery({
      punctuate: 'true',
      keywords: ['Dashwood:2', 'Marianne'],
      keyterm: 'Norland Park',
      language: 'en-US',
      tag: ['a', 'b'],
      utterances: 'true',
      model: 'nova-3',
    });
    expect(JSON.parse(r.nativeFields.options!)).toEqual({
      readableText: true,
      removeDisfluencies: true,
      vocabularyHints: ['Dashwood', 'Marianne', 'Norland Park'],
    });
    expect(r.nativeFields).toMatchObject({ title: 'Deepgram: a, b', languageHint: 'en-US' });
    expect(r).toMatchObject({ utterances: true, raw: null, model: 'nova-3', multichannel: false });
    // filler_words=true keeps the fillers; multichannel asks for legs.
    expect(JSON.parse(mapListenQuery({ filler_words: 'true', multichannel: 'true' }).nativeFields.options!)).toEqual({
      multichannel: true,
    });
    expect(mapListenQuery({ encoding: 'alaw', sample_rate: '8000', channels: '2' }).raw).toEqual({
      encoding: 'alaw',
      sampleRate: 8000,
      channels: 2,
    });
  });

  it('refuses by name: a refused parameter with its reason, an unknown one, a bad value', () => {
    for (const name of Object.keys(REFUSED)) {
      const e = refusal(() => mapListenQuery({ [name]: 'true' }));
      expect(e).toBeInstanceOf(DeepgramError);
      expect(e.message.startsWith(`${name}: not supported`)).toBe(true);
      expect(e.status).toBe(400);
    }
    // switched off, a yes/no feature asks for nothing scribed lacks (LiveKit's recognize() sends detect_language=false)
    expect(mapListenQuery({ detect_language: 'false', profanity_filter: 'false' }).nativeFields).toEqual(mapListenQuery({}).nativeFields);
    expect(refusal(() => mapListenQuery({ replace: 'false' })).message).toMatch(/^replace: not supported/);
    expect(refusal(() => mapListenQuery({ bogus: '1' })).message).toMatch(/^bogus: unknown/);
    expect(refusal(() => mapListenQuery({ punctuate: 'yes' })).message).toMatch(/^punctuate: must be true or false/);
    expect(refusal(() => mapListenQuery({ encoding: 'opus', sample_rate: '16000' })).message).toMatch(/^encoding:/);
    expect(refusal(() => mapListenQuery({ encoding: 'linear16' })).message).toMatch(/^sample_rate: required/);
    expect(refusal(() => mapListenQuery({ channels: '2' })).message).toMatch(/^channels:/);
  });

  it('gives headerless audio a WAV header ffprobe reads as that encoding, rate and channels', async () => {
    const dir = tempDir('scribed-wav-');
    for (const [encoding, codec] of [
      ['linear16', 'pcm_s16le'],
      ['mulaw', 'pcm_mulaw'],
      ['alaw', 'pcm_alaw'],
    ] as const) {
      const body = Buffer.alloc(encoding === 'linear16' ? 32_000 : 16_000, 0x55);
      const file = Buffer.concat([wavHeader(encoding, 8000, 2), body]);
      for (const [offset, value] of wavSizes(body.length)) file.writeUInt32LE(value, offset);
      const p = path.join(dir, `${encoding}.wav`);
      fs.writeFileSync(p, file);
      const probed = await probeAudio(p);
      expect(probed).toMatchObject({ codec, sampleRate: 8000, channels: 2 });
      expect(probed.durationSec).toBeCloseTo(1, 2);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('OpenAI form', () => {
  it('maps the fields onto native fields', () => {
    const r = mapTranscriptionRequest(
      {
        model: ['whisper-1'],
        language: ['en'],
        prompt: ['Dashwood, Norland\nMarianne, Dashwood'],
        response_format: ['verbose_json'],
        'timestamp_granularities[]': ['word', 'segment'],
        temperature: ['0'],
      },
      MODELS,
    );
    expect(r).toMatchObject({ model: 'whisper-1', format: 'verbose_json', granularities: ['word', 'segment'], language: 'en' });
    expect(JSON.parse(r.nativeFields.options!)).toEqual({ vocabularyHints: ['Dashwood', 'Norland', 'Marianne'] });
    expect(mapTranscriptionRequest({ model: ['whisper-1'] }, MODELS)).toMatchObject({
      format: 'json',
      granularities: ['segment'],
      language: null,
    });
    expect(promptTerms(' a ,, b;c\r\n')).toEqual(['a', 'b', 'c']);
    expect(languageName('en')).toBe('english');
    expect(languageName('pt-BR')).toBe('portuguese');
  });

  it('refuses with the param named', () => {
    const cases: Array<[Record<string, string[]>, string, string | null]> = [
      [{}, 'model', null],
      [{ model: ['whisper-9'] }, 'model', 'model_not_found'],
      [{ model: ['whisper-1'], response_format: ['xml'] }, 'response_format', null],
      [{ model: ['whisper-1'], 'timestamp_granularities[]': ['word'] }, 'timestamp_granularities', null],
      [{ model: ['whisper-1'], response_format: ['verbose_json'], 'timestamp_granularities[]': ['char'] }, 'timestamp_granularities', null],
      [{ model: ['whisper-1'], temperature: ['2'] }, 'temperature', null],
      [{ model: ['whisper-1'], chunking_strategy: ['auto'] }, 'chunking_strategy', 'unknown_parameter'],
      [{ model: ['whisper-1'], stream: ['yes'] }, 'stream', null],
      [{ model: ['whisper-1'], stream: ['true'], response_format: ['vtt'] }, 'response_format', null],
      [{ model: ['whisper-1', 'whisper-1'] }, 'model', null],
    ];
    for (const [fields, param, code] of cases) {
      const e = refusal(() => mapTranscriptionRequest(fields, MODELS));
      expect(e).toBeInstanceOf(OpenAiError);
      expect({ status: e.status, param: e.param, code: e.code }).toEqual({ status: 400, param, code });
    }
  });
});
