// The History title a file input gets by default: the file's own name (not the path as typed),
// cut to the title limit of the API (MAX_TITLE_CHARS, counted in code points as the server
// counts them), so a long file name is never a 422. Cut on code points: never inside a
// surrogate pair.
import path from 'node:path';
import { MAX_TITLE_CHARS } from '../core/session-options.js';

export function fileTitle(file: string, limit = MAX_TITLE_CHARS): string {
  const name = path.basename(file);
  const points = [...name];
  return points.length <= limit ? name : points.slice(0, limit).join('');
}
