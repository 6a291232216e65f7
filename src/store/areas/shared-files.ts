// What every node must read, kept in the store when nodes share PostgreSQL (docs/scaling.md):
// content-addressed blobs (voice recordings and design previews, src/store/recordings.ts) and
// the server keys (src/store/server-key.ts). The embedded store keeps both as files in the
// data dir, as it always has; these tables exist there too but stay empty.
//
// Blobs. A blob is one recording or preview, bytes in one row: uploads are cut off at 10 MiB a
// file (MAX_FILE_BYTES) and previews at 10 MiB (design-jobs.ts), so a row stays far below
// PostgreSQL's 1 GB field limit and the statement timeout. A blob is referenced by hash from
// voice_recordings.sha256 and voice_designs.preview_sha256; the rows are written in their own
// transactions, so a blob and its references are reconciled by locks:
//  - putBlob locks the blob's row (SELECT ... FOR UPDATE) and inserts it when absent;
//  - deleteUnreferencedBlobs locks each row, checks the references with a statement that runs
//    after the lock was granted, and deletes only then, in one transaction.
// A publisher calls putBlob again after its references committed (recordings.ts). Whichever of
// that call and a concurrent delete locks the row first, the blob survives: a delete that goes
// first and removes it is followed by the re-insert; one that goes second sees the committed
// reference (READ COMMITTED: each statement sees what committed before it started).
import type { Db } from '../sql/db.js';

/** Store the blob unless it is there; `bytes` is read only when it is missing. True when this
 * call inserted it. */
export async function putBlob(db: Db, sha256: string, sizeBytes: number, bytes: () => Promise<Buffer>, now: Date): Promise<boolean> {
  return db.tx(async (tx) => {
    if (await tx.lockOne('SELECT sha256 FROM blobs WHERE sha256 = ?', [sha256])) return false;
    const data = await bytes();
    if (data.length !== sizeBytes) throw new Error(`blob ${sha256}: expected ${sizeBytes} bytes, read ${data.length}`);
    // DO NOTHING: a concurrent first insert of the same content committed meanwhile.
    const n = await tx.run(
      'INSERT INTO blobs (sha256, bytes, size_bytes, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING',
      [sha256, data, BigInt(sizeBytes), now.toISOString()],
    );
    return n === 1;
  });
}

export async function getBlob(db: Db, sha256: string): Promise<Buffer | null> {
  const r = await db.one<{ bytes: Buffer }>('SELECT bytes FROM blobs WHERE sha256 = ?', [sha256]);
  return r ? r.bytes : null;
}

/** Delete each blob among `shas` that no voice recording or design preview references, the
 * check and the delete under the blob's row lock in one transaction. Returns the hashes
 * deleted. */
export async function deleteUnreferencedBlobs(db: Db, shas: readonly string[]): Promise<string[]> {
  const unique = [...new Set(shas)].sort(); // one lock order, so two deletes cannot deadlock
  if (unique.length === 0) return [];
  return db.tx(async (tx) => {
    const gone: string[] = [];
    for (const sha of unique) {
      if (!(await tx.lockOne('SELECT sha256 FROM blobs WHERE sha256 = ?', [sha]))) continue;
      const n = await tx.run(
        `DELETE FROM blobs WHERE sha256 = ?
            AND NOT EXISTS (SELECT 1 FROM voice_recordings WHERE sha256 = ?)
            AND NOT EXISTS (SELECT 1 FROM voice_designs WHERE preview_sha256 = ?)
            AND NOT EXISTS (SELECT 1 FROM session_recordings WHERE sha256 = ?)`,
        [sha, sha, sha, sha],
      );
      if (n === 1) gone.push(sha);
    }
    return gone;
  });
}

/** The key stored under `name`, or `candidate` when there was none: the first writer wins
 * (INSERT ... ON CONFLICT DO NOTHING, then read back), so every node ends with the same key. */
export async function loadServerKey(db: Db, name: string, candidate: Buffer, now: Date): Promise<Buffer> {
  await db.run('INSERT INTO server_keys (name, key, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING', [
    name,
    candidate,
    now.toISOString(),
  ]);
  const r = await db.one<{ key: Buffer }>('SELECT key FROM server_keys WHERE name = ?', [name]);
  if (!r) throw new Error(`server key ${name} vanished after it was stored`);
  return r.key;
}
