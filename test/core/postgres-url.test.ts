import { describe, expect, it } from 'vitest';
import { parsePostgresUrl } from '../../src/core/postgres-url.js';

describe('parsePostgresUrl', () => {
  it('one host: the URL as given, target any', () => {
    const t = parsePostgresUrl('postgres://u:secret@db.example:6543/scribed?sslmode=require');
    expect(t.targetSessionAttrs).toBe('any');
    expect(t.hosts).toEqual([
      { host: 'db.example', port: 6543, label: 'db.example:6543', url: 'postgres://u:secret@db.example:6543/scribed?sslmode=require' },
    ]);
    expect(t.display).toBe('postgres://u@db.example:6543/scribed');
  });

  it('a host list, libpq style: one URL per host, in order, without target_session_attrs', () => {
    const t = parsePostgresUrl(
      'postgresql://scribed:p%40ss@10.0.0.1:5432,10.0.0.2,[::1]:5433/calls?target_session_attrs=read-write&application_name=x',
    );
    expect(t.targetSessionAttrs).toBe('read-write');
    expect(t.hosts.map((h) => h.url)).toEqual([
      'postgresql://scribed:p%40ss@10.0.0.1:5432/calls?application_name=x',
      'postgresql://scribed:p%40ss@10.0.0.2/calls?application_name=x',
      'postgresql://scribed:p%40ss@[::1]:5433/calls?application_name=x',
    ]);
    expect(t.hosts.map((h) => h.label)).toEqual(['10.0.0.1:5432', '10.0.0.2:5432', '[::1]:5433']);
    // Never the password, nor the parameters.
    expect(t.display).toBe('postgres://scribed@10.0.0.1:5432,10.0.0.2:5432,[::1]:5433/calls');
  });

  it('refuses what it cannot honour', () => {
    expect(() => parsePostgresUrl('postgres://h1,h2/db?target_session_attrs=standby')).toThrow(/not supported/);
    expect(() => parsePostgresUrl('postgres://h1,,h2/db')).toThrow(/empty host/);
    expect(() => parsePostgresUrl('postgres://h1:99999/db')).toThrow(/bad port/);
    expect(() => parsePostgresUrl('mysql://h1/db')).toThrow(/postgres/);
  });
});
