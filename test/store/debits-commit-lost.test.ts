// A group debit whose COMMIT reached PostgreSQL but whose answer never came back (the
// connection died during COMMIT, as when the primary fails over): the store cannot know it
// committed, so the debit fails and its frame is refused, and the client sends the frame
// again, which asks the same debit. It carries the same id (sessionDebitId), and the store
// charges an id once: the account pays once. A TCP proxy between the store and PostgreSQL
// passes the COMMIT on, waits for the server's answer (so the commit is in) and then cuts the
// store's connection instead of passing it back.
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { DebitBatcher } from '../../src/session/debit-batcher.js';
import { openStore } from '../../src/store/index.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { freshDatabase } from '../helpers/postgres-cluster.js';
import { T0, addAccount } from './harness.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Forwards connections to `target`; once armed, the first connection that sends a COMMIT
 * gets the server's answer to it dropped and is cut. */
class CommitCutter {
  private server = net.createServer((client) => this.pipe(client));
  private sockets = new Set<net.Socket>();
  armed = false;
  cuts = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as net.AddressInfo).port;
  }

  private pipe(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    let cutNext = false;
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('data', (data) => {
      // A simple-protocol query: 'Q', its length, the text.
      if (this.armed && data[0] === 0x51 && data.subarray(5).toString('utf8').startsWith('COMMIT')) {
        this.armed = false;
        cutNext = true;
      }
      upstream.write(data);
    });
    upstream.on('data', (data) => {
      if (!cutNext) return void client.write(data);
      // The server answered the COMMIT: it is in. The store never hears of it.
      this.cuts += 1;
      client.destroy();
      upstream.destroy();
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

describe('a group debit whose COMMIT outcome was lost (PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let cutter: CommitCutter;
  let direct: SqlStore;
  let proxied: SqlStore;
  let dir: string;

  beforeEach(async () => {
    db = await freshDatabase(inject('postgresUrl'));
    const url = new URL(db.url);
    cutter = new CommitCutter({ host: url.hostname, port: Number(url.port) });
    const port = await cutter.listen();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-debit-cut-'));
    direct = await openStore({ dataDir: dir, databaseUrl: db.url, databasePoolSize: 2 });
    url.port = String(port);
    proxied = await openStore({ dataDir: dir, databaseUrl: url.toString(), databasePoolSize: 2 });
  });
  afterEach(async () => {
    await proxied?.close();
    await direct?.close();
    await cutter?.close();
    await db?.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is charged once when the frame asks it again, cut the same or differently', async () => {
    await addAccount(direct, 'acc_cut', 10_000n);
    const created = await direct.createSession({
      accountId: 'acc_cut',
      idempotencyKey: 'k1',
      requestHash: 'h',
      session: {
        id: 'rts_cut',
        accountId: 'acc_cut',
        transcriptionId: 'stt_cut',
        title: 't',
        languageHint: null,
        options: {},
        createdAt: T0,
      },
      sampleRateHz: 8000,
    });
    expect(created.kind).toBe('created');

    const batcher = new DebitBatcher({ store: proxied, windowMs: 0 });
    const balance = async () => (await direct.getAccount('acc_cut'))!.characters;
    const sessionCharged = async () =>
      (await direct.db.one<{ characters_charged: bigint }>('SELECT characters_charged FROM rt_sessions WHERE id = ?', ['rts_cut']))!
        .characters_charged;
    // As frame intake asks it: the session's charge so far is 0, this debit brings it to 800.
    const ask = (amount: bigint, chargedTo: bigint) => batcher.debit('acc_cut', amount, 'realtime_audio', 'rts_cut', 'rts_cut', chargedTo);

    cutter.armed = true;
    await expect(ask(800n, 800n)).rejects.toThrow();
    expect(cutter.cuts).toBe(1);
    // The COMMIT landed: the debit is in, though the batcher was told it failed.
    expect(await balance()).toBe(9_200n);

    // The frame was refused, the client sends it again: the same debit, answered with the
    // balance as it is, not charged a second time.
    await expect(ask(800n, 800n)).resolves.toBe(9_200n);
    expect(await balance()).toBe(9_200n);
    expect(await sessionCharged()).toBe(800n);

    // The next second's debit is lost the same way; the frame comes again cut differently
    // (it now reaches into the second after): the node, still at 800, asks 1,600 to reach
    // 2,400. The lost commit already brought the session to 1,600: 800 more is charged.
    cutter.armed = true;
    await expect(ask(800n, 1_600n)).rejects.toThrow();
    expect(cutter.cuts).toBe(2);
    expect(await balance()).toBe(8_400n);
    await expect(ask(1_600n, 2_400n)).resolves.toBe(7_600n);
    expect(await sessionCharged()).toBe(2_400n);

    const rows = await direct.db.all<{ delta: bigint; debit_id: string }>(
      "SELECT delta, debit_id FROM characters_ledger WHERE account_id = ? AND reason = 'realtime_audio' ORDER BY id",
      ['acc_cut'],
    );
    expect(rows).toEqual([
      { delta: -800n, debit_id: 'rts_cut:800' },
      { delta: -800n, debit_id: 'rts_cut:1600' },
      { delta: -800n, debit_id: 'rts_cut:2400' },
    ]);
  });
});
