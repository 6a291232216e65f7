// The names OpenAI's transcription API uses that scribed serves: response formats,
// timestamp granularities and the OpenAI model names served as aliases of the node's
// recognizer. Data only, imported by the mapping (request.ts), the routes and the API document.

export const RESPONSE_FORMATS = ['json', 'text', 'srt', 'vtt', 'verbose_json'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];
export type Granularity = 'word' | 'segment';

/** OpenAI's transcription model names, served by the node's recognizer under those names so
 * an unchanged client works. */
export const OPENAI_MODEL_ALIASES = ['whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe'] as const;
