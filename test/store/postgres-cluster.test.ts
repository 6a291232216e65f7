import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freshDatabase } from '../helpers/postgres-cluster.js';

describe('throwaway PostgreSQL cluster', () => {
  let db: { url: string; drop(): Promise<void> };
  let client: pg.Client;

  beforeAll(async () => {
    db = await freshDatabase(inject('postgresUrl'));
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it('answers SELECT 1 on a fresh database of its own', async () => {
    const { rows } = await client.query<{ one: number }>('SELECT 1 AS one');
    expect(rows).toEqual([{ one: 1 }]);
    const { rows: dbRows } = await client.query<{ db: string }>('SELECT current_database() AS db');
    expect(dbRows[0]!.db).toMatch(/^scribed_t_/);
    const { rows: tables } = await client.query("SELECT 1 FROM pg_tables WHERE schemaname = 'public'");
    expect(tables).toHaveLength(0);
  });

  it('round-trips a table', async () => {
    await client.query('CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)');
    await client.query('INSERT INTO notes (body) VALUES ($1), ($2)', ['héllo', 'wörld']);
    const { rows } = await client.query<{ id: number; body: string }>('SELECT id, body FROM notes ORDER BY id');
    expect(rows).toEqual([
      { id: 1, body: 'héllo' },
      { id: 2, body: 'wörld' },
    ]);
  });

  it('drop() removes the database even with a connection open', async () => {
    const other = await freshDatabase(inject('postgresUrl'));
    const c = new pg.Client({ connectionString: other.url });
    c.on('error', () => {}); // terminated by drop()
    await c.connect();
    await other.drop();
    const { rows } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [new URL(other.url).pathname.slice(1)]);
    expect(rows).toHaveLength(0);
    await c.end().catch(() => {});
  });
});
