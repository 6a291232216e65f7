// The session-option flags every ingest client takes (`scribed stream`, `scribed rtp`), defined
// once. Ingest clients default to segmentCommitMode "vad": a file or a call gets one final per
// utterance, as users of vosk-server or Deepgram expect, instead of one every 30 s cut
// mid-phrase. The API's own default stays "manual" (the spec); `--segment-commit-mode manual`
// asks for it.
import type { Argv } from 'yargs';

export interface SessionOptionArgs {
  'segment-commit-mode'?: string;
  'vocabulary-hint'?: string[];
  'include-alignment'?: boolean;
  'remove-disfluencies'?: boolean;
  'session-option'?: string[];
}

/** The ingest clients' default; docs/ingest.md. */
export const INGEST_SEGMENT_COMMIT_MODE = 'vad';

export function withSessionOptionFlags<T>(y: Argv<T>): Argv<T & SessionOptionArgs> {
  return y
    .option('segment-commit-mode', {
      type: 'string',
      choices: ['manual', 'vad'],
      default: INGEST_SEGMENT_COMMIT_MODE,
      describe: 'session option segmentCommitMode: vad gives a final per utterance; manual one per 30 s (or per commit)',
    })
    .option('vocabulary-hint', { type: 'string', array: true, describe: 'session option vocabularyHints (repeatable)' })
    .option('include-alignment', { type: 'boolean', describe: 'session option includeAlignment' })
    .option('remove-disfluencies', { type: 'boolean', describe: 'session option removeDisfluencies' })
    .option('session-option', { type: 'string', array: true, describe: 'any other session option, NAME=JSON (repeatable)' }) as Argv<
    T & SessionOptionArgs
  >;
}

/** Session options from the flags (inputEncoding is added by the streamer). */
export function sessionOptionsFrom(args: SessionOptionArgs): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (args['segment-commit-mode']) o.segmentCommitMode = args['segment-commit-mode'];
  if (args['vocabulary-hint']?.length) o.vocabularyHints = args['vocabulary-hint'];
  if (args['include-alignment'] !== undefined) o.includeAlignment = args['include-alignment'];
  if (args['remove-disfluencies'] !== undefined) o.removeDisfluencies = args['remove-disfluencies'];
  for (const kv of args['session-option'] ?? []) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new Error(`--session-option wants NAME=JSON, got ${kv}`);
    const raw = kv.slice(eq + 1);
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      value = raw;
    }
    o[kv.slice(0, eq)] = value;
  }
  return o;
}
