// The flags that say which store a command opens, shared by `serve` and every operator
// command (`accounts`, `interpretation`), so an operator points them all at the same one.
import type { Argv } from 'yargs';
import { loadConfig, storeSettings, type ConfigInput } from '../config.js';
import type { StoreSettings } from '../store/index.js';

export interface StoreArgs {
  'data-dir'?: string;
  'database-url'?: string;
  'database-pool-size'?: number;
  'database-connect-timeout-ms'?: number;
  'database-statement-timeout-ms'?: number;
  'database-failover-timeout-ms'?: number;
}

export function withStoreOptions<T>(y: Argv<T>): Argv<T & StoreArgs> {
  return y
    .option('data-dir', {
      type: 'string',
      describe: 'node state; the SQLite store without --database-url [env SCRIBED_DATA_DIR, default ./data]',
    })
    .option('database-url', {
      type: 'string',
      describe: 'PostgreSQL store shared by all nodes, postgres://USER:PASSWORD@HOST:PORT/DB [env SCRIBED_DATABASE_URL]',
    })
    .option('database-pool-size', {
      type: 'number',
      describe: 'PostgreSQL connections per process [env SCRIBED_DATABASE_POOL_SIZE, default 10]',
    })
    .option('database-connect-timeout-ms', {
      type: 'number',
      describe: 'wait for a PostgreSQL connection [env SCRIBED_DATABASE_CONNECT_TIMEOUT_MS, default 5000]',
    })
    .option('database-statement-timeout-ms', {
      type: 'number',
      describe: 'longest PostgreSQL statement [env SCRIBED_DATABASE_STATEMENT_TIMEOUT_MS, default 30000]',
    })
    .option('database-failover-timeout-ms', {
      type: 'number',
      describe:
        'with several hosts in --database-url: how long to look for the read-write one once the primary is lost [env SCRIBED_DATABASE_FAILOVER_TIMEOUT_MS, default 30000]',
    }) as Argv<T & StoreArgs>;
}

export function storeConfigInput(args: StoreArgs): ConfigInput {
  return {
    dataDir: args['data-dir'],
    databaseUrl: args['database-url'],
    databasePoolSize: args['database-pool-size'],
    databaseConnectTimeoutMs: args['database-connect-timeout-ms'],
    databaseStatementTimeoutMs: args['database-statement-timeout-ms'],
    databaseFailoverTimeoutMs: args['database-failover-timeout-ms'],
  };
}

export function storeSettingsFrom(args: StoreArgs): StoreSettings {
  return storeSettings(loadConfig(storeConfigInput(args)));
}
