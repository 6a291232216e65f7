// Opens the service's store: the embedded SQLite file `<dataDir>/scribed.db`. The server and
// the operator CLI both come through here and may hold the same file open at once.
import fs from 'node:fs';
import path from 'node:path';
import { SqliteStore } from './sqlite.js';
import type { Store } from './store.js';

export const DATABASE_FILE = 'scribed.db';

export async function openStore(dataDir: string): Promise<Store> {
  // Owner-only: the database holds credential hashes and transcripts. The mode applies to
  // directories created here; an existing directory's mode is the operator's choice.
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const store = new SqliteStore({ path: path.join(dataDir, DATABASE_FILE) });
  await store.open();
  return store;
}
