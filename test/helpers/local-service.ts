// A real scribed service in this process (real store, real engine, an ephemeral loopback
// port) that needs no test runner: what the benches start (bench/ingest.ts and others), and
// what test/helpers/service.ts builds on with the store of the vitest project. The store is
// SQLite in the data dir unless `databaseUrl` names a PostgreSQL database.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import type { StoreSettings } from '../../src/store/index.js';
import { createService, type Service } from '../../src/service.js';
import { provisionAccount, type ProvisionedAccount } from '../../src/accounts/provision.js';
import type { ConfigInput } from '../../src/config.js';

export interface TestService {
  service: Service;
  baseUrl: string;
  wsBase: string;
  dataDir: string;
  /** The store the service runs on, for tests and operator commands that open it too. */
  storeSettings: StoreSettings;
  account(characters?: bigint): Promise<ProvisionedAccount>;
  stop(): Promise<void>;
}

export function tempDir(prefix = 'scribed-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export type LocalServiceOptions = ConfigInput & { now?: () => Date; logger?: Logger };

/** `logger`: the service's logger (default: silent, or SCRIBED_TEST_LOG's level). */
export async function startLocalService(opts: LocalServiceOptions = {}): Promise<TestService> {
  const dataDir = opts.dataDir ?? tempDir();
  const storeSettings: StoreSettings = {
    dataDir,
    ...(opts.databaseUrl !== undefined ? { databaseUrl: opts.databaseUrl } : {}),
    ...(opts.databasePoolSize !== undefined ? { databasePoolSize: opts.databasePoolSize } : {}),
  };
  const service = await createService({
    maxDecoders: 2,
    ...opts,
    host: '127.0.0.1',
    port: opts.port ?? 0,
    dataDir,
    logger: opts.logger ?? pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' }),
  });
  const address = await service.listen();
  const url = new URL(address);
  return {
    service,
    baseUrl: `http://127.0.0.1:${url.port}`,
    wsBase: `ws://127.0.0.1:${url.port}`,
    dataDir,
    storeSettings,
    account: (characters = 100_000n) => provisionAccount(service.store, 'test', characters),
    stop: () => service.stop(),
  };
}
