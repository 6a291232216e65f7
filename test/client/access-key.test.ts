import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAccessKey, readAccessKey } from '../../src/client/access-key.js';
import { tempDir } from '../helpers/service.js';

const KEY = 'sk_live_0123456789abcdef';

describe('access key of the ingest CLIs', () => {
  it('takes the first line of a key file: a comment or CRLF after the key is not part of it', () => {
    const dir = tempDir();
    for (const [name, text] of [
      ['plain', `${KEY}\n`],
      ['comment', `${KEY}\n# rotated 2026-11, ask ops\n`],
      ['crlf', `${KEY}\r\nnext\r\n`],
      ['no-newline', KEY],
      ['blanks', `  ${KEY}\t\n`],
    ] as const) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, text);
      expect(readAccessKey(file, {}), name).toBe(KEY);
    }
  });

  it('refuses a malformed or empty first line without ever showing the key', () => {
    for (const bad of ['sk_live 0123', 'sk_live_ü123', 'sk_\u0007bell']) {
      let message = '';
      try {
        parseAccessKey(`${bad}\n`, '/etc/scribed/key');
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^VALIDATION_FAILED: --access-key-file: the access key in \/etc\/scribed\/key is malformed/);
      expect(message).not.toContain(bad.slice(0, 7));
    }
    expect(() => parseAccessKey(`\n${KEY}\n`, 'k')).toThrow(/first line of k is empty/);
  });

  it('reads SCRIBED_ACCESS_KEY when there is no file, with the same rule', () => {
    expect(readAccessKey(undefined, { SCRIBED_ACCESS_KEY: ` ${KEY}\n` })).toBe(KEY);
    expect(() => readAccessKey(undefined, {})).toThrow(/no access key: pass --access-key-file FILE or set SCRIBED_ACCESS_KEY/);
    expect(() => readAccessKey(undefined, { SCRIBED_ACCESS_KEY: 'a b' })).toThrow(/SCRIBED_ACCESS_KEY is malformed/);
  });
});
