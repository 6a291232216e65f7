// `scribed accounts create|credit`: operator commands that write the same store a running
// server uses: the SQLite file (WAL and a busy timeout make that safe across processes) or
// the PostgreSQL database of --database-url.
import type { CommandModule } from 'yargs';
import { provisionAccount } from '../accounts/provision.js';
import { storeSettingsFrom, withStoreOptions, type StoreArgs } from './store-options.js';
import { openStore } from '../store/index.js';

function parseCharacters(value: unknown): bigint {
  const s = String(value ?? '0');
  if (!/^\d{1,19}$/.test(s)) throw new Error(`--characters must be a non-negative integer, got ${s}`);
  return BigInt(s);
}

interface CreateArgs extends StoreArgs {
  name: string;
  characters?: string;
  json?: boolean;
}
interface CreditArgs extends StoreArgs {
  account: string;
  characters: string;
}

const createCommand: CommandModule<object, CreateArgs> = {
  command: 'create',
  describe: 'create an account; prints its accessKey and apiToken once (they are stored hashed)',
  builder: (y) =>
    withStoreOptions(
      y
        .option('name', { type: 'string', demandOption: true })
        .option('characters', { type: 'string', describe: 'starting Characters balance', default: '0' })
        .option('json', { type: 'boolean', describe: 'print one JSON line' }),
    ),
  handler: async (args) => {
    const characters = parseCharacters(args.characters);
    if (!args.name.trim() || args.name.length > 200) throw new Error('--name must be 1 to 200 characters');
    const store = await openStore(storeSettingsFrom(args));
    try {
      const out = await provisionAccount(store, args.name.trim(), characters);
      if (args.json) process.stdout.write(`${JSON.stringify(out)}\n`);
      else process.stdout.write(`account ${out.accountId}\naccessKey ${out.accessKey}\napiToken ${out.apiToken}\n(store these now: they are not shown again)\n`);
    } finally {
      await store.close();
    }
  },
};

const creditCommand: CommandModule<object, CreditArgs> = {
  command: 'credit',
  describe: 'add Characters to an account',
  builder: (y) => withStoreOptions(y.option('account', { type: 'string', demandOption: true }).option('characters', { type: 'string', demandOption: true })),
  handler: async (args) => {
    const amount = parseCharacters(args.characters);
    if (amount === 0n) throw new Error('--characters must be positive');
    const store = await openStore(storeSettingsFrom(args));
    try {
      if (!(await store.getAccount(args.account))) throw new Error(`NOT_FOUND: account ${args.account} does not exist`);
      const balance = await store.creditCharacters(args.account, amount, 'operator_credit', null);
      process.stdout.write(`${JSON.stringify({ accountId: args.account, characters: balance.toString() })}\n`);
    } finally {
      await store.close();
    }
  },
};

export const accountsCommand: CommandModule = {
  command: 'accounts <command>',
  describe: 'manage accounts (create, credit)',
  builder: (y) => y.command(createCommand).command(creditCommand).demandCommand(1),
  handler: () => undefined,
};
