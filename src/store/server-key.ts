// Server-side secret keys kept as files in the data dir (`<dataDir>/keys/<name>.key`, 32
// random bytes, owner-only), created on first use. Used to derive values the service must
// reproduce without storing them (dashboard group tokens, callback signing secrets).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export function loadServerKey(dataDir: string, name: string): Buffer {
  const dir = path.join(dataDir, 'keys');
  const file = path.join(dir, `${name}.key`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    fs.writeFileSync(file, randomBytes(32), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = fs.readFileSync(file);
  if (key.length !== 32) throw new Error(`${file} must hold 32 bytes, found ${key.length}`);
  return key;
}
