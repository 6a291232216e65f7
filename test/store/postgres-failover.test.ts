// The PostgreSQL driver against a primary and its synchronous standby
// (test/helpers/postgres-replication.ts), given both hosts in one URL: it picks the read-write
// host, and when the primary is killed and the standby promoted it moves to the standby. Every
// transaction that returned is on the new primary; the ones under way at the kill either ran
// again there or failed, and none is there twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDb, type FailoverEvent } from '../../src/store/sql/postgres-db.js';
import { startReplicatedPostgres, type ReplicatedPostgres } from '../helpers/postgres-replication.js';

let cluster: ReplicatedPostgres;
beforeAll(async () => {
  cluster = await startReplicatedPostgres();
}, 90_000);
afterAll(async () => {
  await cluster?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PostgreSQL failover in the driver (multi-host URL, target_session_attrs=read-write)', () => {
  it('refuses a host list with no read-write host, within the failover timeout', async () => {
    const standbyOnly = cluster.standby.url.replace('/scribed_test', ',127.0.0.1:1/scribed_test?target_session_attrs=read-write');
    const events: FailoverEvent[] = [];
    const t0 = Date.now();
    await expect(PostgresDb.open({ url: standbyOnly, failoverTimeoutMs: 500, onFailover: (e) => events.push(e) }, [])).rejects.toThrow(
      /no read-write server/,
    );
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(events.at(-1)).toMatchObject({ kind: 'unavailable' });
    const hosts = (events.at(-1) as { hosts: Record<string, string> }).hosts;
    expect(hosts[`127.0.0.1:${cluster.standby.port}`]).toBe('standby');
  });

  it('kill -9 the primary, promote the standby: writers go on on the new primary, nothing acknowledged is lost', async () => {
    // The standby listed first: the driver must pass it over for the read-write host.
    const url = `postgres://scribed@127.0.0.1:${cluster.standby.port},127.0.0.1:${cluster.primary.port}/scribed_test?target_session_attrs=read-write`;
    const events: FailoverEvent[] = [];
    const db = await PostgresDb.open({ url, poolSize: 4, failoverTimeoutMs: 20_000, onFailover: (e) => events.push(e) }, [
      { version: 1, sql: 'CREATE TABLE t (writer BIGINT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (writer, seq))' },
    ]);
    try {
      expect(events).toEqual([{ kind: 'switched', from: null, to: `127.0.0.1:${cluster.primary.port}`, ms: expect.any(Number) }]);
      const acked = new Map<number, number[]>();
      const failed: Array<{ writer: number; seq: number; err: string }> = [];
      let stop = false;
      const writer = async (w: number) => {
        acked.set(w, []);
        for (let seq = 0; !stop; seq++) {
          try {
            await db.tx(async (tx) => {
              await tx.run('INSERT INTO t (writer, seq) VALUES (?, ?)', [BigInt(w), BigInt(seq)]);
            });
            acked.get(w)!.push(seq);
          } catch (err) {
            failed.push({ writer: w, seq, err: (err as Error).message });
          }
          await sleep(5);
        }
      };
      const writers = [0, 1, 2, 3].map(writer);
      await sleep(500);
      const before = [...acked.values()].reduce((n, a) => n + a.length, 0);
      expect(before).toBeGreaterThan(10);
      const t0 = Date.now();
      await cluster.killPrimary();
      await sleep(300); // the operator (or Patroni) takes a moment
      await cluster.promoteStandby();
      // The first write acknowledged after the kill.
      const count = () => [...acked.values()].reduce((n, a) => n + a.length, 0);
      const atKill = count();
      while (count() <= atKill + 4 && Date.now() - t0 < 25_000) await sleep(10);
      const firstAckMs = Date.now() - t0;
      await sleep(300);
      stop = true;
      await Promise.all(writers);
      process.stderr.write(
        `driver failover: kill to writes acknowledged again ${firstAckMs} ms; events ${JSON.stringify(events)}; failed ${JSON.stringify(failed)}\n`,
      );

      expect(events.map((e) => e.kind)).toEqual(['switched', 'lost', 'switched']);
      expect(events[2]).toMatchObject({ from: `127.0.0.1:${cluster.primary.port}`, to: `127.0.0.1:${cluster.standby.port}` });
      expect(count()).toBeGreaterThan(atKill + 4);
      // Every acknowledged write is on the new primary, once (the primary key would refuse a
      // second), and nothing that failed is there... unless it failed at its COMMIT, whose
      // outcome is unknown by nature.
      const rows = await db.all<{ writer: bigint; seq: bigint }>('SELECT writer, seq FROM t');
      const stored = new Set(rows.map((r) => `${r.writer}/${r.seq}`));
      for (const [w, seqs] of acked) for (const s of seqs) expect(stored.has(`${w}/${s}`), `${w}/${s}`).toBe(true);
      expect(failed.length).toBeLessThanOrEqual(4); // at most the one in flight per writer
      expect(rows.length).toBeLessThanOrEqual(count() + failed.length);
    } finally {
      await db.close();
    }
  }, 60_000);
});
