// The container files must agree with each other and with the service: the Containerfile's
// user, volume, port and healthcheck; every file it copies present and not ignored; the
// compose topology's node addresses those of deploy/haproxy.cfg (mounted unchanged), its
// mounts present, Prometheus's configuration valid (promtool) and scraping every node.
// scripts/container-test.sh builds and runs the image for real (not in CI: minutes).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// js-yaml (a declared dev dependency) has no types of its own.
const yaml = createRequire(import.meta.url)('js-yaml') as { load(text: string): unknown };

const ROOT = path.resolve(import.meta.dirname, '../..');
const COMPOSE_DIR = path.join(ROOT, 'deploy/compose');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const CONTAINERFILE = read('Containerfile').replace(/\\\n/g, ' ');
const instructions = (name: string) => [...CONTAINERFILE.matchAll(new RegExp(`^${name}\\s+(.*)$`, 'gm'))].map((m) => m[1]!.trim());
const finalStage = CONTAINERFILE.slice(CONTAINERFILE.lastIndexOf('\nFROM '));

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  networks?: Record<string, { ipv4_address: string }>;
}
const compose = yaml.load(read('deploy/compose/compose.yaml')) as {
  services: Record<string, Service>;
  networks: Record<string, unknown>;
  volumes: Record<string, unknown>;
};

describe('Containerfile', () => {
  it('runs as an unprivileged user with its data dir a volume, its port exposed and a /readyz healthcheck', () => {
    const env = Object.fromEntries([...finalStage.matchAll(/\b(SCRIBED_\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
    expect(env.SCRIBED_HOST).toBe('0.0.0.0');
    expect(finalStage).toMatch(new RegExp(`^VOLUME ${env.SCRIBED_DATA_DIR}$`, 'm'));
    expect(finalStage).toMatch(new RegExp(`^EXPOSE ${env.SCRIBED_PORT}$`, 'm'));
    const user = /^USER (\S+)$/m.exec(finalStage)?.[1];
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(finalStage).toMatch(new RegExp(`useradd [^&]*\\b${user}\\b`));
    expect(finalStage).toMatch(/^HEALTHCHECK .*CMD curl -fsS "http:\/\/127\.0\.0\.1:\$\{SCRIBED_PORT\}\/readyz"/m);
    expect(instructions('FROM').every((f) => f.startsWith('${BASE}'))).toBe(true);
    expect(CONTAINERFILE).toMatch(/^ARG BASE=docker\.io\/library\/debian:bookworm-slim$/m);
  });

  it('copies only files that exist and that .containerignore lets through', () => {
    const ignored = read('.containerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const sources = instructions('COPY')
      .filter((c) => !c.startsWith('--from'))
      .flatMap((c) => c.split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(5);
    for (const source of sources) {
      const matches = source.includes('*')
        ? fs
            .readdirSync(path.join(ROOT, path.dirname(source)))
            .filter((f) => new RegExp(`^${path.basename(source).replace('.', '\\.').replace('*', '.*')}$`).test(f))
        : [source];
      expect(matches.length, source).toBeGreaterThan(0);
      if (!source.includes('*')) expect(fs.existsSync(path.join(ROOT, source)), source).toBe(true);
      expect(
        ignored.some((i) => source === i || source.startsWith(`${i}/`)),
        `${source} is in .containerignore`,
      ).toBe(false);
    }
    // What the running service reads from its package root (src/config.ts packageRoot()).
    for (const needed of ['samples/*.wav', 'src', 'binding.gyp', 'scripts/build-telephony-model.sh']) expect(sources).toContain(needed);
  });
});

describe('deploy/compose/compose.yaml', () => {
  const nodes = Object.entries(compose.services).filter(([, s]) => s.build?.dockerfile === 'Containerfile');

  it('runs three nodes of the Containerfile image on one PostgreSQL, each with its own data volume', () => {
    expect(nodes.map(([n]) => n)).toEqual(['node1', 'node2', 'node3']);
    for (const [name, s] of nodes) {
      expect(path.resolve(COMPOSE_DIR, s.build!.context)).toBe(ROOT);
      expect(s.environment!.SCRIBED_DATABASE_URL).toMatch(/^postgres:\/\/scribed:scribed@postgres:5432\/scribed$/);
      expect(s.volumes).toEqual([`${name}-data:/var/lib/scribed`]);
    }
    expect(Object.keys(compose.services).sort()).toEqual(['grafana', 'haproxy', 'node1', 'node2', 'node3', 'postgres', 'prometheus']);
  });

  it('gives the nodes the addresses deploy/haproxy.cfg names, in both backends, and mounts that file unchanged', () => {
    const cfg = read('deploy/haproxy.cfg');
    for (const backend of ['scribed_live', 'scribed_api']) {
      const section = cfg.slice(cfg.indexOf(`\nbackend ${backend}\n`) + 1).split(/\n(?=backend |listen |frontend )/)[0]!;
      const servers = [...section.matchAll(/^\s*server (\S+) (\S+):(\d+)/gm)].map((m) => [m[1], m[2], Number(m[3])]);
      expect(servers).toEqual(nodes.map(([name, s]) => [name, s.networks!.scribed!.ipv4_address, 8080]));
    }
    expect(compose.services.haproxy!.volumes).toContain('../haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro');
    expect(cfg).toMatch(/^\s*bind :8080$/m);
    expect(compose.services.haproxy!.ports).toEqual(['127.0.0.1:8080:8080']);
  });

  it('mounts only files that exist, and Prometheus (checked by promtool) scrapes every node', () => {
    for (const s of Object.values(compose.services)) {
      for (const v of s.volumes ?? []) {
        const source = v.split(':')[0]!;
        if (source.startsWith('.')) expect(fs.existsSync(path.resolve(COMPOSE_DIR, source)), v).toBe(true);
        else expect(Object.keys(compose.volumes), v).toContain(source);
      }
    }
    execFileSync('promtool', ['check', 'config', path.join(COMPOSE_DIR, 'prometheus.yml')], { stdio: 'pipe' });
    const prom = yaml.load(read('deploy/compose/prometheus.yml')) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    expect(prom.scrape_configs.flatMap((c) => c.static_configs.flatMap((t) => t.targets))).toEqual(
      nodes.map(([, s]) => `${s.networks!.scribed!.ipv4_address}:8080`),
    );
    const datasource = yaml.load(read('deploy/compose/grafana/provisioning/datasources/prometheus.yaml')) as {
      datasources: Array<{ url: string }>;
    };
    expect(datasource.datasources[0]!.url).toBe(`http://${compose.services.prometheus!.networks!.scribed!.ipv4_address}:9090`);
    expect(fs.readdirSync(path.join(ROOT, 'docs/grafana')).filter((f) => f.endsWith('.json')).length).toBeGreaterThan(0);
  });
});
