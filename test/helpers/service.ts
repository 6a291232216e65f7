// A real scribed service for integration tests: real store in a temp dir, real engine,
// listening on an ephemeral loopback port.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { createService, type Service } from '../../src/service.js';
import { provisionAccount, type ProvisionedAccount } from '../../src/accounts/provision.js';
import type { ConfigInput } from '../../src/config.js';

export interface TestService {
  service: Service;
  baseUrl: string;
  wsBase: string;
  dataDir: string;
  account(characters?: bigint): Promise<ProvisionedAccount>;
  stop(): Promise<void>;
}

export function tempDir(prefix = 'scribed-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export async function startService(opts: ConfigInput & { now?: () => Date } = {}): Promise<TestService> {
  const dataDir = opts.dataDir ?? tempDir();
  const service = await createService({
    maxDecoders: 2,
    ...opts,
    host: '127.0.0.1',
    port: opts.port ?? 0,
    dataDir,
    logger: pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' }),
  });
  const address = await service.listen();
  const url = new URL(address);
  return {
    service,
    baseUrl: `http://127.0.0.1:${url.port}`,
    wsBase: `ws://127.0.0.1:${url.port}`,
    dataDir,
    account: (characters = 100_000n) => provisionAccount(service.store, 'test', characters),
    stop: () => service.stop(),
  };
}
