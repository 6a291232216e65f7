// Server-side secret keys (32 random bytes each), created on first use. Used to derive values
// the service must reproduce without storing them (dashboard group tokens, callback signing
// secrets), so every node serving one store must hold the same keys:
//  - embedded store: files in the data dir (`<dataDir>/keys/<name>.key`, owner-only), as
//    existing single-node deployments have them;
//  - shared PostgreSQL store: rows of `server_keys`, the first node to store a key wins and
//    every node reads that one (areas/shared-files.ts). A node that still has a key file from
//    before offers that key, so a deployment moving onto PostgreSQL keeps its tokens and
//    callback secrets (the first node to start decides).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Store } from './store.js';

const KEY_BYTES = 32;

function keyFile(dataDir: string, name: string): string {
  if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`not a key name: ${name}`);
  return path.join(dataDir, 'keys', `${name}.key`);
}

function checked(key: Buffer, where: string): Buffer {
  if (key.length !== KEY_BYTES) throw new Error(`${where} must hold ${KEY_BYTES} bytes, found ${key.length}`);
  return key;
}

export function loadServerKey(dataDir: string, name: string): Buffer {
  const file = keyFile(dataDir, name);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    fs.writeFileSync(file, randomBytes(KEY_BYTES), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return checked(fs.readFileSync(file), file);
}

/** Where the server keys live; `load` gives the same key for a name on every call (and, on a
 * shared store, on every node). */
export interface ServerKeys {
  load(name: string): Promise<Buffer>;
}

/** Keys as files in the data dir (embedded store: one node). */
export class FileServerKeys implements ServerKeys {
  constructor(private readonly dataDir: string) {}

  async load(name: string): Promise<Buffer> {
    return loadServerKey(this.dataDir, name);
  }
}

/** Keys in the shared store's `server_keys` table. */
export class DatabaseServerKeys implements ServerKeys {
  readonly #loaded = new Map<string, Promise<Buffer>>();

  constructor(
    private readonly store: Pick<Store, 'loadServerKey'>,
    private readonly dataDir: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  load(name: string): Promise<Buffer> {
    let key = this.#loaded.get(name);
    if (!key) {
      key = this.#load(name);
      this.#loaded.set(name, key);
      key.catch(() => this.#loaded.delete(name)); // a failed load is tried again next time
    }
    return key;
  }

  async #load(name: string): Promise<Buffer> {
    const file = keyFile(this.dataDir, name);
    // An existing key file (never created here) is this node's offer; otherwise a random key.
    let candidate: Buffer;
    try {
      candidate = checked(fs.readFileSync(file), file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      candidate = randomBytes(KEY_BYTES);
    }
    return checked(await this.store.loadServerKey(name, candidate, this.now()), `server key ${name}`);
  }
}

/** The keys of a service: in the store when nodes share PostgreSQL, files otherwise. */
export function serverKeysFor(shared: boolean, store: Store, dataDir: string, now?: () => Date): ServerKeys {
  return shared ? new DatabaseServerKeys(store, dataDir, now) : new FileServerKeys(dataDir);
}
