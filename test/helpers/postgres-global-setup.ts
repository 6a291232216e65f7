// vitest globalSetup: one throwaway PostgreSQL cluster for the whole run, its URL provided to
// test files as inject('postgresUrl'). Test files should not use that database directly but take
// an empty one of their own with freshDatabase(inject('postgresUrl')).
//
// SCRIBED_TEST_DATABASE_URL, if set, is used instead of starting a cluster (the user in it must
// be allowed to CREATE DATABASE). Without it the PostgreSQL binaries must be installed: a missing
// install fails the run rather than skipping the PostgreSQL tests.
import type { TestProject } from 'vitest/node';
import { startPostgresCluster } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}

export default async function setup({ provide }: TestProject): Promise<() => Promise<void>> {
  const external = process.env.SCRIBED_TEST_DATABASE_URL;
  if (external) {
    provide('postgresUrl', external);
    return async () => {};
  }
  const started = Date.now();
  const cluster = await startPostgresCluster();
  if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[postgres] ${cluster.url} up in ${Date.now() - started} ms\n`);
  provide('postgresUrl', cluster.url);
  return () => cluster.stop();
}
