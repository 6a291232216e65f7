// Deepgram's pre-recorded query parameters as scribed treats them, in three lists (the
// OpenAPI document and docs/compat.md show them): ACTING ones change what scribed does,
// IGNORED ones are accepted and have no effect (named so a client's defaults do not break),
// REFUSED ones are refused with the reason; any parameter in none of them is refused as
// unknown. Data only, imported by the mapping (options.ts) and the API document.

export const RAW_ENCODINGS = ['linear16', 'mulaw', 'alaw'] as const;
export type RawEncoding = (typeof RAW_ENCODINGS)[number];

/** Parameters that act, and what they map to. */
/** Parameters that act alike on both routes: text options, hints, language, tag. */
const TEXT_AND_TAGGING = {
  punctuate: 'readable text (native options.readableText)',
  smart_format: 'readable text (native options.readableText)',
  numerals: 'readable text (native options.readableText: spoken numbers as digits)',
  filler_words: 'false (the default) removes fillers (native removeDisfluencies); true keeps them',
  keywords: 'vocabulary hints (native options.vocabularyHints; intensifier dropped)',
  keyterm: 'vocabulary hints (native options.vocabularyHints)',
  language: 'the language (native languageHint, checked against the recognizer)',
  tag: 'the History row title',
  redact:
    'native options.redact: numbers, true or aggressive_numbers -> numbers; pci (credit_card, credit_card_expiration, cvv) -> pci; ssn; phone_number -> phone; email_address -> email; repeated or comma-separated; pii, phi and other entities are refused (docs/compat.md)',
} as const;

export const ACTING = {
  encoding: 'headerless audio: linear16, mulaw or alaw (with sample_rate)',
  sample_rate: 'the rate of headerless audio (required with encoding)',
  channels: 'channels of headerless audio (1 or 2, interleaved)',
  multichannel: 'each of 2 channels transcribed as a leg of a call (native options.multichannel)',
  utterances: 'results.utterances: one per segment scribed cut at a pause',
  ...TEXT_AND_TAGGING,
  callback:
    'answer {request_id} at once; the response body is POSTed to this URL when the job ends, at least once, through the webhook outbox (docs/webhooks.md)',
  callback_method: 'post (the default); put is refused',
} as const;

/** Parameters accepted and ignored. */
export const IGNORED = {
  model: 'scribed serves its own recognizer whatever model is named',
  version: 'always the latest',
  tier: 'no tiers',
  utt_split: 'segments are cut at pauses by scribed',
  mip_opt_out: 'nothing is sent to a model-improvement programme',
} as const;

/** Refused parameters with why (others are refused as unknown). */
export const REFUSED = {
  diarize: 'no speaker diarization; send stereo with multichannel=true for two parties',
  detect_language: 'the recognizer cannot name the spoken language',
  summarize: 'no summaries',
  topics: 'no topic detection',
  intents: 'no intent detection',
  sentiment: 'no sentiment analysis',
  detect_entities: 'no entity detection in this API (the native API has entityCategories)',
  search: 'no phonetic search',
  replace: 'no term replacement',
  paragraphs: 'no paragraphs',
  profanity_filter: 'no profanity filter',
  dictation: 'no dictation commands',
  measurements: 'no measurement formatting',
  diarize_version: 'no speaker diarization',
} as const;

/** Refused features that are yes/no switches: `false` asks for the feature to be off, which
 * is what scribed does, so a client that sends every switch (LiveKit's plugin sends
 * dictation=false, diarize=false, profanity_filter=false) is served; `true` is refused. */
export const OFF_SWITCHES: ReadonlySet<string> = new Set([
  'diarize',
  'detect_language',
  'summarize',
  'topics',
  'intents',
  'sentiment',
  'detect_entities',
  'paragraphs',
  'profanity_filter',
  'dictation',
  'measurements',
]);

/** The live socket's parameters (GET /v1/listen), three lists as above: the audio is raw
 * frames in a native input encoding, so containers are refused. */
export const LIVE_ACTING = {
  encoding: 'linear16 (PCM s16le at 8000, 16000, 22050, 24000, 44100 or 48000 Hz), mulaw or alaw (8000 Hz): the native inputEncoding',
  sample_rate: 'the rate of the audio (required with encoding)',
  channels: '1, or 2 (interleaved) with multichannel=true',
  multichannel:
    'with channels=2: each channel a leg of a call (one native session per channel, docs/calls.md), its Results with channel_index [i, 2]',
  interim_results: 'true: partials as Results with is_final false',
  endpointing:
    'ms of silence ending an utterance: segmentCommitMode vad with commitSilenceMs; false: manual (finals on Finalize or the 30 s bound)',
  utterance_end_ms: 'UtteranceEnd once this much audio passed the last final word without new speech',
  vad_events: 'SpeechStarted when a segment opens',
  ...TEXT_AND_TAGGING,
} as const;

export const LIVE_IGNORED = {
  model: 'scribed serves its own recognizer whatever model is named',
  version: 'always the latest',
  tier: 'no tiers',
  mip_opt_out: 'nothing is sent to a model-improvement programme',
  no_delay: 'results are sent as soon as they are decoded',
} as const;

export const LIVE_REFUSED = {
  ...REFUSED,
  callback: 'pre-recorded only: results come on the socket',
  callback_method: 'pre-recorded only',
  utterances: 'pre-recorded only; live utterances end with speech_final and UtteranceEnd',
  utt_split: 'pre-recorded only',
} as const;
