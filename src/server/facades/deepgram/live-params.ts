// Deepgram's live query parameters (GET /v1/listen as a WebSocket) mapped onto the body of a
// native real-time session (POST .../stt/realtime/sessions) and the facade's own switches.
// Pure. Every parameter is in exactly one of the live lists of parameters.ts; any other is
// refused naming it, before the upgrade. The native body is then validated by the same code
// as a native create (src/core/session-options.ts), so both APIs accept the same sessions.
import { isInputEncodingName } from '../../../core/audio/encodings.js';
import { MULTICHANNEL_CHANNELS } from '../../../core/channels.js';
import { all, bad, bool, integer, keywordTerm, last, type Query } from './options.js';
import { switchedOff } from './query.js';
import { LIVE_ACTING, LIVE_IGNORED, LIVE_REFUSED, OFF_SWITCHES } from './parameters.js';
import { redactPolicies } from './redact.js';

export interface LiveListenRequest {
  /** The native create-session body: title, languageHint, options. */
  sessionBody: { title: string; languageHint?: string; options: Record<string, unknown> };
  sampleRate: number;
  /** Bytes of one sample of one channel on the wire (2 for linear16, 1 for mulaw and alaw). */
  bytesPerSample: 1 | 2;
  /** 2 with multichannel=true: interleaved channels, each a leg of a call; else 1. */
  channels: 1 | 2;
  interimResults: boolean;
  /** UtteranceEnd after this much audio past the last final word; null: not sent. */
  utteranceEndMs: number | null;
  vadEvents: boolean;
  model: string | null;
}

export function mapLiveQuery(q: Query): LiveListenRequest {
  for (const name of Object.keys(q)) {
    if (Object.hasOwn(LIVE_ACTING, name) || Object.hasOwn(LIVE_IGNORED, name) || switchedOff(q, name, OFF_SWITCHES)) continue;
    if (Object.hasOwn(LIVE_REFUSED, name))
      bad(`${name}: not supported by scribed on the live socket (${LIVE_REFUSED[name as keyof typeof LIVE_REFUSED]})`);
    bad(`${name}: unknown or unsupported parameter`);
  }
  const encoding = last(q, 'encoding');
  if (encoding === undefined)
    bad('encoding: required on the live socket (linear16, mulaw or alaw with sample_rate); containers are not read live');
  const sampleRate = integer(q, 'sample_rate', 8000, 48000);
  if (sampleRate === undefined) bad('sample_rate: required with encoding');
  let inputEncoding: string;
  if (encoding === 'linear16') inputEncoding = `pcm_s16le_${sampleRate}`;
  else if (encoding === 'mulaw') inputEncoding = `mulaw_${sampleRate}`;
  else if (encoding === 'alaw') inputEncoding = `alaw_${sampleRate}`;
  else return bad(`encoding: ${JSON.stringify(encoding)} is not served on the live socket; send linear16, mulaw or alaw`);
  if (!isInputEncodingName(inputEncoding)) {
    bad(
      `sample_rate: ${sampleRate} is not served for ${encoding} (linear16: 8000, 16000, 22050, 24000, 44100 or 48000; mulaw and alaw: 8000)`,
    );
  }
  // Two channels are two parties (a call): each is recognized alone, as a leg. A stereo
  // stream mixed into one recognizer gives neither party's words, so it is not offered.
  const channels = integer(q, 'channels', 1, 8) ?? 1;
  const multichannel = bool(q, 'multichannel') ?? false;
  if (channels > MULTICHANNEL_CHANNELS)
    bad(`channels: at most ${MULTICHANNEL_CHANNELS} (interleaved, with multichannel=true: one leg of a call per channel)`);
  if (channels === 2 && !multichannel)
    bad('channels: 2 channels are served with multichannel=true (each channel a leg of a call); a mixed-down stereo stream is not');
  if (multichannel && channels !== 2)
    bad('multichannel: needs channels=2 (interleaved audio, one party per channel); one channel is a plain stream');

  const options: Record<string, unknown> = { inputEncoding };
  const endpointing = last(q, 'endpointing');
  if (endpointing === 'false') {
    options.segmentCommitMode = 'manual';
  } else {
    options.segmentCommitMode = 'vad';
    if (endpointing !== undefined && endpointing !== 'true') {
      const ms = integer(q, 'endpointing', 0, 60_000)!;
      options.commitSilenceMs = ms;
    }
  }
  if ([bool(q, 'punctuate'), bool(q, 'smart_format'), bool(q, 'numerals')].some((b) => b === true)) options.readableText = true;
  else options.readableText = false;
  if (!(bool(q, 'filler_words') ?? false)) options.removeDisfluencies = true;
  const hints = [...all(q, 'keywords').map(keywordTerm), ...all(q, 'keyterm').map((k) => k.trim())].filter((h) => h !== '');
  if (hints.length > 0) options.vocabularyHints = [...new Set(hints)];
  const redact = redactPolicies(q);
  if (redact.length > 0) options.redact = redact;

  const tags = all(q, 'tag')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const sessionBody: LiveListenRequest['sessionBody'] = {
    title: tags.length > 0 ? `Deepgram live: ${tags.join(', ')}`.slice(0, 200) : 'Deepgram live',
    options,
  };
  const language = last(q, 'language');
  if (language !== undefined && language.trim() !== '') sessionBody.languageHint = language.trim();
  return {
    sessionBody,
    sampleRate: sampleRate!,
    bytesPerSample: encoding === 'linear16' ? 2 : 1,
    channels: channels === 2 ? 2 : 1,
    interimResults: bool(q, 'interim_results') ?? false,
    utteranceEndMs: integer(q, 'utterance_end_ms', 1000, 60_000) ?? null,
    vadEvents: bool(q, 'vad_events') ?? false,
    model: last(q, 'model') ?? null,
  };
}
