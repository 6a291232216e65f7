// The schema is written twice, once per dialect (src/store/migrations.ts for SQLite,
// migrations-postgres.ts for PostgreSQL: docs/architecture.md, "Store", says why), so this
// test holds them to one schema: both lists are applied to fresh databases and the resulting
// tables, columns (type family, nullability, default), primary keys and indexes are compared.
// A column or index added to one list only fails here.
import Database from 'better-sqlite3';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_FILE } from '../../src/store/index.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/migrations.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/migrations-postgres.js';
import { createHarness, type StoreHarness } from './harness.js';

// Full-text search (docs/search.md) is each engine's own: SQLite's FTS5 table with its shadow
// tables and the integer keys it indexes segments by (migration 12), PostgreSQL's GIN index
// on the segment text's tsvector (a generated column of segments) and the index giving hits
// newest first (its migration 7).
// Each side's is checked to exist.
const SQLITE_ONLY_TABLES = /^segments_fts(_|$)/;
const SQLITE_SEARCH_TABLES = ['segments_fts', 'segments_fts_rows'];
const POSTGRES_SEARCH_COLUMN = 'search_vector';
const POSTGRES_SEARCH_INDEX = 'segments(search_vector)';
const POSTGRES_SEARCH_ORDER = 'segments(created_at, transcription_id, idx)';

interface Column {
  type: string;
  notNull: boolean;
  default: string | null;
}

interface Schema {
  /** table -> column -> what it is */
  columns: Record<string, Record<string, Column>>;
  /** table -> its primary key's columns, in order */
  primaryKeys: Record<string, string[]>;
  /** `table(col, ...)` plus ` UNIQUE` and ` WHERE ...`: every index but the primary key's */
  indexes: string[];
}

/** Both dialects' spellings of the same kind of value. */
function typeFamily(type: string): string {
  const t = type.toLowerCase();
  if (t === 'integer' || t === 'bigint') return 'integer';
  if (t === 'text') return 'text';
  if (t === 'blob' || t === 'bytea') return 'bytes';
  if (t === 'real' || t === 'double precision') return 'real';
  return `unknown:${t}`;
}

/** `0`, `'NONE'`, `'NONE'::text`, `(0)::bigint` -> one spelling. */
function defaultValue(d: string | null): string | null {
  if (d === null) return null;
  return d.replace(/::[a-z ]+$/i, '').replace(/^\((.*)\)$/, '$1');
}

function sqliteSchema(file: string): Schema {
  const db = new Database(file, { readonly: true });
  try {
    const schema: Schema = { columns: {}, primaryKeys: {}, indexes: [] };
    const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as {
      name: string;
    }[];
    for (const { name } of tables) {
      if (SQLITE_ONLY_TABLES.test(name)) continue;
      const cols = db.prepare('SELECT name, type, "notnull" AS nn, dflt_value AS dflt, pk FROM pragma_table_info(?)').all(name) as {
        name: string;
        type: string;
        nn: number;
        dflt: string | null;
        pk: number;
      }[];
      schema.columns[name] = Object.fromEntries(
        cols.map((c) => [c.name, { type: typeFamily(c.type), notNull: c.nn === 1 || c.pk > 0, default: defaultValue(c.dflt) }]),
      );
      schema.primaryKeys[name] = cols
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name);
      const indexes = db.prepare('SELECT name, "unique" AS u, origin, partial FROM pragma_index_list(?)').all(name) as {
        name: string;
        u: number;
        origin: string;
        partial: number;
      }[];
      for (const ix of indexes) {
        if (ix.origin === 'pk') continue;
        const on = (db.prepare('SELECT name FROM pragma_index_info(?) ORDER BY seqno').all(ix.name) as { name: string }[]).map(
          (c) => c.name,
        );
        const where = ix.partial
          ? ((db.prepare('SELECT sql FROM sqlite_schema WHERE name = ?').get(ix.name) as { sql: string }).sql.match(
              / WHERE (.*)$/is,
            )?.[1] ?? '')
          : '';
        schema.indexes.push(`${name}(${on.join(', ')})${ix.u ? ' UNIQUE' : ''}${where ? ` WHERE ${where}` : ''}`);
      }
    }
    schema.indexes.sort();
    return schema;
  } finally {
    db.close();
  }
}

async function postgresSchema(url: string): Promise<Schema> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const schema: Schema = { columns: {}, primaryKeys: {}, indexes: [] };
    const cols = await client.query<{
      table_name: string;
      column_name: string;
      data_type: string;
      is_nullable: string;
      column_default: string | null;
    }>(
      "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    );
    for (const c of cols.rows) {
      (schema.columns[c.table_name] ??= {})[c.column_name] = {
        type: typeFamily(c.data_type),
        notNull: c.is_nullable === 'NO',
        default: defaultValue(c.column_default),
      };
    }
    const ix = await client.query<{
      table_name: string;
      primary: boolean;
      unique: boolean;
      columns: string[];
      expressions: string | null;
      predicate: string | null;
    }>(`
      SELECT t.relname AS table_name, i.indisprimary AS primary, i.indisunique AS unique,
             pg_get_expr(i.indexprs, i.indrelid) AS expressions,
             ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                   JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns,
             pg_get_expr(i.indpred, i.indrelid) AS predicate
        FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace s ON s.oid = t.relnamespace
       WHERE s.nspname = 'public'`);
    for (const r of ix.rows) {
      if (r.primary) {
        schema.primaryKeys[r.table_name] = r.columns;
        continue;
      }
      // pg_get_expr wraps a predicate in parentheses; SQLite keeps it as written.
      const where = r.predicate?.replace(/^\((.*)\)$/s, '$1');
      const on = r.expressions === null ? r.columns : [...r.columns, r.expressions];
      schema.indexes.push(`${r.table_name}(${on.join(', ')})${r.unique ? ' UNIQUE' : ''}${where ? ` WHERE ${where}` : ''}`);
    }
    for (const t of Object.keys(schema.columns)) schema.primaryKeys[t] ??= [];
    schema.indexes.sort();
    return schema;
  } finally {
    await client.end();
  }
}

describe('one schema in two dialects', () => {
  let sqlite: StoreHarness;
  let postgres: StoreHarness;
  let lite: Schema;
  let pgs: Schema;

  beforeAll(async () => {
    sqlite = await createHarness('sqlite');
    postgres = await createHarness('postgres');
    await (await sqlite.open()).close();
    await (await postgres.open()).close();
    lite = sqliteSchema(path.join(sqlite.settings.dataDir, DATABASE_FILE));
    pgs = await postgresSchema(postgres.settings.databaseUrl!);
  });

  afterAll(async () => {
    await sqlite?.dispose();
    await postgres?.dispose();
  });

  it('has the same tables with the same columns, types, nullability and defaults', () => {
    expect(Object.keys(lite.columns).length).toBeGreaterThan(20);
    const { [POSTGRES_SEARCH_COLUMN]: searchVector, ...segments } = pgs.columns.segments!;
    expect(searchVector?.type).toBe('unknown:tsvector');
    expect({ ...pgs.columns, segments }).toEqual(lite.columns);
  });

  it('has the same primary keys', () => {
    expect(pgs.primaryKeys).toEqual(lite.primaryKeys);
  });

  it('has the same indexes, but for the one only PostgreSQL has', () => {
    // Nodes sharing PostgreSQL look sessions up by their owner (lease renewal, orphan
    // adoption: src/store/areas/ownership.ts); one SQLite node owns every session it serves,
    // and SQLite's version 7 shipped without it (a shipped migration is never edited).
    const POSTGRES_ONLY = ['rt_sessions(owner_node) WHERE owner_node IS NOT NULL', POSTGRES_SEARCH_INDEX, POSTGRES_SEARCH_ORDER];
    expect(pgs.indexes.filter((i) => !POSTGRES_ONLY.includes(i))).toEqual(lite.indexes);
    for (const i of POSTGRES_ONLY) expect(pgs.indexes).toContain(i);
  });

  it("has each engine's own full-text search: FTS5 tables on SQLite, a GIN index on PostgreSQL", () => {
    const db = new Database(path.join(sqlite.settings.dataDir, DATABASE_FILE), { readonly: true });
    try {
      const names = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
      for (const t of SQLITE_SEARCH_TABLES) expect(names).toContain(t);
    } finally {
      db.close();
    }
    expect(pgs.indexes).toContain(POSTGRES_SEARCH_INDEX);
  });

  it('reaches its latest version in both lists (PostgreSQL version 1 is SQLite versions 1 to 6 in one)', () => {
    const pgLatest = Math.max(...POSTGRES_MIGRATIONS.map((m) => m.version));
    expect(LATEST_SCHEMA_VERSION).toBe(Math.max(...MIGRATIONS.map((m) => m.version)));
    expect(pgLatest).toBe(LATEST_SCHEMA_VERSION - 5);
  });
});
