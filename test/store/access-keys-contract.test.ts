// Access keys (areas/accounts.ts) on both engines: a rotation adds a key and gives the keys
// in force a grace, after which findCredential no longer finds them; a revocation holds at
// once, also for another connection (the operator's CLI beside a running server); the
// listing carries no secret; keys made before the rotation migration keep working.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/migrations-postgres.js';
import { SqliteDb } from '../../src/store/sql/sqlite-db.js';
import { PostgresDb } from '../../src/store/sql/postgres-db.js';
import { createAccount } from '../../src/store/areas/accounts.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { ENGINES, T0, addAccount, createHarness, sha, type StoreHarness } from './harness.js';

const inMs = (ms: number): string => new Date(Date.now() + ms).toISOString();
const HOUR = 3_600_000;
const newKey = (n: number) => ({ id: `sk_new_${n}`, secretHash: sha(`new-secret-${n}`) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(ENGINES)('access keys on %s', (engine) => {
  let harness: StoreHarness;
  let store: SqlStore;

  beforeEach(async () => {
    harness = await createHarness(engine);
    store = await harness.open();
    await addAccount(store, 'acc_1', 7n);
    await addAccount(store, 'acc_2');
  });
  afterEach(async () => {
    await harness.dispose();
  });

  it('rotation keeps the old key valid through its grace, then refuses it; the new key works', async () => {
    const at = new Date().toISOString();
    const retireAt = inMs(HOUR);
    const keys = await store.rotateAccessKey('acc_1', newKey(1), at, retireAt);
    expect(keys).toEqual([
      { id: 'sk_acc_1', createdAt: T0, expiresAt: retireAt, revokedAt: null },
      { id: 'sk_new_1', createdAt: at, expiresAt: null, revokedAt: null },
    ]);
    expect(await store.findCredential('access_key', 'sk_acc_1')).toEqual({
      id: 'sk_acc_1',
      accountId: 'acc_1',
      kind: 'access_key',
      secretHash: sha('sk-secret-acc_1'),
    });
    expect(await store.findCredential('access_key', 'sk_new_1')).toEqual({
      id: 'sk_new_1',
      accountId: 'acc_1',
      kind: 'access_key',
      secretHash: sha('new-secret-1'),
    });
    // The other account and the API token are untouched.
    expect((await store.listAccounts()).find((a) => a.id === 'acc_2')?.accessKeys).toEqual([
      { id: 'sk_acc_2', createdAt: T0, expiresAt: null, revokedAt: null },
    ]);
    expect(await store.findCredential('api_token', 'tok_acc_1')).not.toBeNull();

    // A second rotation with a short grace shortens the first key's end too (the earlier end
    // wins), and once that passes both old keys read as unknown while the newest works.
    const shortEnd = inMs(1500);
    await store.rotateAccessKey('acc_1', newKey(2), new Date().toISOString(), shortEnd);
    expect(await store.findCredential('access_key', 'sk_acc_1')).not.toBeNull();
    expect(await store.findCredential('access_key', 'sk_new_1')).not.toBeNull();
    await sleep(Date.parse(shortEnd) - Date.now() + 50);
    expect(await store.findCredential('access_key', 'sk_acc_1')).toBeNull();
    expect(await store.findCredential('access_key', 'sk_new_1')).toBeNull();
    expect(await store.findCredential('access_key', 'sk_new_2')).not.toBeNull();
    const listed = (await store.listAccounts()).find((a) => a.id === 'acc_1')!.accessKeys;
    expect(listed.map((k) => [k.id, k.expiresAt])).toEqual([
      ['sk_acc_1', shortEnd],
      ['sk_new_1', shortEnd],
      ['sk_new_2', null],
    ]);

    // A longer grace later never lengthens an end already set.
    await store.rotateAccessKey('acc_1', newKey(3), new Date().toISOString(), inMs(HOUR));
    expect((await store.listAccounts()).find((a) => a.id === 'acc_1')!.accessKeys.map((k) => k.expiresAt)).toEqual([
      shortEnd,
      shortEnd,
      expect.any(String),
      null,
    ]);
  });

  it('a grace of zero (an end already past) refuses the old key at once', async () => {
    const now = new Date().toISOString();
    await store.rotateAccessKey('acc_1', newKey(1), now, now);
    expect(await store.findCredential('access_key', 'sk_acc_1')).toBeNull();
    expect(await store.findCredential('access_key', 'sk_new_1')).not.toBeNull();
  });

  it('revocation holds at once, for another connection too, and is idempotent', async () => {
    const other = await harness.open(); // the operator's CLI beside the server's connection
    await other.rotateAccessKey('acc_1', newKey(1), new Date().toISOString(), inMs(HOUR));
    const at = new Date().toISOString();
    expect(await other.revokeAccessKeys('acc_1', 'sk_acc_1', at)).toEqual(['sk_acc_1']);
    expect(await store.findCredential('access_key', 'sk_acc_1')).toBeNull();
    expect(await store.findCredential('access_key', 'sk_new_1')).not.toBeNull();
    // Again: nothing new revoked, the first time kept.
    expect(await other.revokeAccessKeys('acc_1', 'sk_acc_1', inMs(1000))).toEqual([]);
    expect((await store.listAccounts()).find((a) => a.id === 'acc_1')!.accessKeys[0]).toEqual({
      id: 'sk_acc_1',
      createdAt: T0,
      expiresAt: expect.any(String),
      revokedAt: at,
    });

    // Without a key id: every key of the account not yet revoked, and only that account's.
    expect(await other.revokeAccessKeys('acc_1', null, new Date().toISOString())).toEqual(['sk_new_1']);
    expect(await store.findCredential('access_key', 'sk_new_1')).toBeNull();
    expect(await store.findCredential('access_key', 'sk_acc_2')).not.toBeNull();
    // The API token is not an access key: revocation leaves it.
    expect(await store.findCredential('api_token', 'tok_acc_1')).not.toBeNull();
    // A rotation after a revocation issues a working key and does not revive the revoked.
    await other.rotateAccessKey('acc_1', newKey(2), new Date().toISOString(), inMs(HOUR));
    expect(await store.findCredential('access_key', 'sk_new_2')).not.toBeNull();
    expect(await store.findCredential('access_key', 'sk_acc_1')).toBeNull();
  });

  it("refuses another account's key, an API token id and an unknown account", async () => {
    const now = new Date().toISOString();
    await expect(store.revokeAccessKeys('acc_1', 'sk_acc_2', now)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(store.revokeAccessKeys('acc_1', 'tok_acc_1', now)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(store.revokeAccessKeys('acc_nope', null, now)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(store.rotateAccessKey('acc_nope', newKey(1), now, now)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await store.findCredential('access_key', 'sk_acc_2')).not.toBeNull();
    expect(await store.findCredential('access_key', 'sk_new_1')).toBeNull();
  });

  it('lists every account oldest first with its access keys and no secret or hash', async () => {
    const listed = await store.listAccounts();
    expect(listed).toEqual([
      {
        id: 'acc_1',
        name: 'name of acc_1',
        characters: 7n,
        createdAt: T0,
        accessKeys: [{ id: 'sk_acc_1', createdAt: T0, expiresAt: null, revokedAt: null }],
      },
      {
        id: 'acc_2',
        name: 'name of acc_2',
        characters: 0n,
        createdAt: T0,
        accessKeys: [{ id: 'sk_acc_2', createdAt: T0, expiresAt: null, revokedAt: null }],
      },
    ]);
    const text = JSON.stringify(listed, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    expect(text).not.toContain('secret');
    expect(text).not.toContain(sha('sk-secret-acc_1').toString('hex'));
  });
});

describe.each(ENGINES)('keys made before the rotation migration, on %s', (engine) => {
  let harness: StoreHarness;
  afterEach(async () => {
    await harness.dispose();
  });

  it('keep working after it, as keys in force', async () => {
    harness = await createHarness(engine);
    const account = {
      id: 'acc_old',
      name: 'old',
      characters: 3n,
      accessKey: { id: 'sk_old', secretHash: sha('old-secret') },
      apiToken: { id: 'tok_old', secretHash: sha('old-token') },
      createdAt: T0,
    };
    // The schema as it was just before the migration that added expires_at and revoked_at.
    if (engine === 'sqlite') {
      fs.mkdirSync(harness.settings.dataDir, { recursive: true });
      const db = SqliteDb.open(
        path.join(harness.settings.dataDir, DATABASE_FILE),
        MIGRATIONS.filter((m) => m.version < 11),
      );
      await createAccount(db, account);
      await db.close();
    } else {
      const db = await PostgresDb.open(
        { url: harness.settings.databaseUrl! },
        POSTGRES_MIGRATIONS.filter((m) => m.version < 6),
      );
      await createAccount(db, account);
      await db.close();
    }
    const store = await harness.open();
    expect(await store.findCredential('access_key', 'sk_old')).toEqual({
      id: 'sk_old',
      accountId: 'acc_old',
      kind: 'access_key',
      secretHash: sha('old-secret'),
    });
    expect(await store.findCredential('api_token', 'tok_old')).not.toBeNull();
    expect((await store.listAccounts())[0]!.accessKeys).toEqual([{ id: 'sk_old', createdAt: T0, expiresAt: null, revokedAt: null }]);
  });
});
