// The access key of the ingest CLIs (`scribed stream`, `scribed rtp`): from a file or the
// environment, never a flag (command lines are visible to every user in `ps`).
//
// Only the first line of a key file counts, so a file may carry a comment or a trailing
// newline after the key. The key must be one run of printable ASCII without spaces: anything
// else would be refused as an HTTP header value on every request (and retried for ever), so it
// is refused here, once, with a message that says what is wrong and never shows the key.
import fs from 'node:fs';
import { ScribedError } from '../core/errors.js';

const KEY_PATTERN = /^[\x21-\x7e]+$/;

/** The key from the first line of `text` (surrounding blanks and a CR removed). Throws
 * VALIDATION_FAILED, naming `source` but not the key, when it is empty or malformed. */
export function parseAccessKey(text: string, source: string): string {
  const key = (text.split('\n', 1)[0] ?? '').trim();
  if (key === '')
    throw new ScribedError('VALIDATION_FAILED', `--access-key-file: no access key: the first line of ${source} is empty`, {
      details: { field: 'access-key' },
    });
  if (!KEY_PATTERN.test(key)) {
    const at = [...key].findIndex((c) => !KEY_PATTERN.test(c));
    throw new ScribedError(
      'VALIDATION_FAILED',
      `--access-key-file: the access key in ${source} is malformed: character ${at + 1} of its first line is not printable ASCII (or is a space); the key is not shown`,
      { details: { field: 'access-key' } },
    );
  }
  return key;
}

/** The access key from `file` (its first line) or else SCRIBED_ACCESS_KEY, given by the caller
 * (the CLI reads it through src/config.ts). */
export function readAccessKey(file: string | undefined, env: { SCRIBED_ACCESS_KEY?: string | undefined }): string {
  if (file !== undefined) return parseAccessKey(fs.readFileSync(file, 'utf8'), file);
  const value = env.SCRIBED_ACCESS_KEY ?? '';
  if (value.trim() === '')
    throw new ScribedError('VALIDATION_FAILED', '--access-key-file: no access key: pass --access-key-file FILE or set SCRIBED_ACCESS_KEY', {
      details: { field: 'access-key' },
    });
  return parseAccessKey(value, 'SCRIBED_ACCESS_KEY');
}
