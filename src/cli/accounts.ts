// `scribed accounts create|credit|list|rotate-key|revoke-key`: operator commands that write the same store a running
// server uses: the SQLite file (WAL and a busy timeout make that safe across processes) or
// the PostgreSQL database of --database-url.
import type { CommandModule } from 'yargs';
import { provisionAccount } from '../accounts/provision.js';
import {
  DEFAULT_GRACE_SECONDS,
  checkGraceSeconds,
  listAccountViews,
  revokeAccessKeys,
  rotateAccessKey,
  type AccessKeyView,
} from '../accounts/access-keys.js';
import { CREDENTIAL_ID_CHARS } from '../core/credentials.js';
import { storeConfigInput, storeSettingsFrom, withStoreOptions, type StoreArgs } from './store-options.js';
import { REDACTION_POLICIES } from '../core/session-options.js';
import { openStore } from '../store/index.js';
import { loadConfig, storeSettings } from '../config.js';
import { endAccountDeskAccess, issueLoginLink } from '../desk/login-link.js';
import { parseLinkTtl } from '../desk/policy.js';

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
      else
        process.stdout.write(
          `account ${out.accountId}\naccessKey ${out.accessKey}\napiToken ${out.apiToken}\n(store these now: they are not shown again)\n`,
        );
    } finally {
      await store.close();
    }
  },
};

const creditCommand: CommandModule<object, CreditArgs> = {
  command: 'credit',
  describe: 'add Characters to an account',
  builder: (y) =>
    withStoreOptions(
      y.option('account', { type: 'string', demandOption: true }).option('characters', { type: 'string', demandOption: true }),
    ),
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

interface ListArgs extends StoreArgs {
  json?: boolean;
}
interface RotateArgs extends StoreArgs {
  account: string;
  'grace-seconds': number;
  json?: boolean;
}
interface RevokeArgs extends StoreArgs {
  account: string;
  'key-id'?: string;
  json?: boolean;
}

function keyLine(k: AccessKeyView): string {
  const state = k.state === 'active' ? 'active' : k.state === 'revoked' ? `revoked at ${k.at}` : `${k.state} at ${k.at}`;
  return `  key ${k.id} ${state} (created ${k.createdAt})`;
}

const listCommand: CommandModule<object, ListArgs> = {
  command: 'list',
  describe: 'list accounts: id, name, Characters, created, access key ids and their state (never a secret)',
  builder: (y) => withStoreOptions(y.option('json', { type: 'boolean', describe: 'print one JSON line: {"accounts": [...]}' })),
  handler: async (args) => {
    const store = await openStore(storeSettingsFrom(args));
    try {
      const accounts = await listAccountViews(store);
      if (args.json) {
        process.stdout.write(`${JSON.stringify({ accounts })}\n`);
        return;
      }
      for (const a of accounts) {
        process.stdout.write(`${a.accountId} ${JSON.stringify(a.name)} characters=${a.characters} created=${a.createdAt}\n`);
        for (const k of a.accessKeys) process.stdout.write(`${keyLine(k)}\n`);
      }
      if (accounts.length === 0) process.stdout.write('no accounts\n');
    } finally {
      await store.close();
    }
  },
};

const rotateCommand: CommandModule<object, RotateArgs> = {
  command: 'rotate-key',
  describe: 'issue a new access key (printed once); the keys in force stay valid for --grace-seconds, then are refused',
  builder: (y) =>
    withStoreOptions(
      y
        .option('account', { type: 'string', demandOption: true })
        .option('grace-seconds', {
          type: 'number',
          describe: 'how long the old keys stay valid (0: refused at once)',
          default: DEFAULT_GRACE_SECONDS,
        })
        .option('json', { type: 'boolean', describe: 'print one JSON line' }),
    ),
  handler: async (args) => {
    const grace = checkGraceSeconds(args['grace-seconds']);
    const store = await openStore(storeSettingsFrom(args));
    try {
      const out = await rotateAccessKey(store, args.account, grace);
      if (args.json) process.stdout.write(`${JSON.stringify(out)}\n`);
      else {
        process.stdout.write(`account ${out.accountId}\naccessKey ${out.accessKey}\n(store it now: it is not shown again)\n`);
        for (const k of out.accessKeys) process.stdout.write(`${keyLine(k)}\n`);
      }
    } finally {
      await store.close();
    }
  },
};

const revokeCommand: CommandModule<object, RevokeArgs> = {
  command: 'revoke-key',
  describe: 'revoke an access key at once (without --key-id: every access key of the account; issue a new one with rotate-key)',
  builder: (y) =>
    withStoreOptions(
      y
        .option('account', { type: 'string', demandOption: true })
        .option('key-id', { type: 'string', describe: "the key id (as `accounts list` shows it); default: all of the account's keys" })
        .option('json', { type: 'boolean', describe: 'print one JSON line' }),
    ),
  handler: async (args) => {
    const keyId = args['key-id'] ?? null;
    if (keyId !== null && !new RegExp(`^[0-9a-f]{${CREDENTIAL_ID_CHARS}}$`).test(keyId))
      throw new Error(`--key-id must be ${CREDENTIAL_ID_CHARS} lowercase hex characters (the id \`accounts list\` shows), got ${keyId}`);
    const store = await openStore(storeSettingsFrom(args));
    try {
      const revoked = await revokeAccessKeys(store, args.account, keyId);
      // A revoked key ends the account's desk sessions too: a desk session is a read of the
      // account that outlives no revocation (docs/desk.md, "Sessions").
      const desk = await endAccountDeskAccess(store, args.account, new Date());
      if (args.json)
        process.stdout.write(
          `${JSON.stringify({ accountId: args.account, revoked, deskSessionsEnded: desk.sessions, loginLinksVoided: desk.links })}\n`,
        );
      else {
        process.stdout.write(revoked.length ? `revoked ${revoked.join(' ')}\n` : 'nothing to revoke: already revoked\n');
        if (desk.sessions > 0 || desk.links > 0)
          process.stdout.write(`ended ${desk.sessions} desk session(s), voided ${desk.links} unused login link(s)\n`);
      }
    } finally {
      await store.close();
    }
  },
};

interface LoginLinkArgs extends StoreArgs {
  account: string;
  'base-url'?: string;
  ttl: string;
  json?: boolean;
}

// The desk's login link (docs/desk.md): read-only, single-use, short-lived; printed once.
const loginLinkCommand: CommandModule<object, LoginLinkArgs> = {
  command: 'login-link',
  describe: "print a single-use, read-only login link to the account's desk (/desk/); it expires after --ttl",
  builder: (y) =>
    withStoreOptions(
      y
        .option('account', { type: 'string', demandOption: true })
        .option('base-url', {
          type: 'string',
          describe: 'how browsers reach scribed, e.g. https://scribed.example [default: SCRIBED_PUBLIC_URL; required without it]',
        })
        .option('ttl', { type: 'string', describe: 'how long the link may be opened: 90s, 15m, 2h (at most 24h)', default: '15m' })
        .option('json', { type: 'boolean', describe: 'print one JSON line' }),
    ),
  handler: async (args) => {
    const ttlMs = parseLinkTtl(args.ttl);
    const config = loadConfig(storeConfigInput(args));
    // Never guessed: a link to the wrong origin cannot sign anyone in (docs/desk.md).
    const baseUrl = args['base-url'] ?? config.publicUrl;
    if (baseUrl === undefined) {
      throw new Error(
        "login-link needs the desk's public address: pass --base-url https://scribed.example, or set the server's --public-url (SCRIBED_PUBLIC_URL) in this environment",
      );
    }
    const store = await openStore(storeSettings(config));
    try {
      const out = await issueLoginLink(store, args.account, baseUrl, ttlMs, new Date());
      if (args.json) process.stdout.write(`${JSON.stringify(out)}\n`);
      else process.stdout.write(`${out.url}\n(single use, read-only; expires ${out.expiresAt}; not shown again)\n`);
    } finally {
      await store.close();
    }
  },
};

interface DeskLogoutArgs extends StoreArgs {
  account: string;
  json?: boolean;
}

// Ends every desk session of the account at once (a lost laptop, a link sent to the wrong person).
const deskLogoutCommand: CommandModule<object, DeskLogoutArgs> = {
  command: 'desk-logout',
  describe: 'end every desk session of the account at once and void its unused login links',
  builder: (y) =>
    withStoreOptions(
      y.option('account', { type: 'string', demandOption: true }).option('json', { type: 'boolean', describe: 'print one JSON line' }),
    ),
  handler: async (args) => {
    const store = await openStore(storeSettingsFrom(args));
    try {
      if (!(await store.getAccount(args.account))) throw new Error(`NOT_FOUND: account ${args.account} does not exist`);
      const ended = await endAccountDeskAccess(store, args.account, new Date());
      if (args.json) process.stdout.write(`${JSON.stringify({ accountId: args.account, ...ended })}\n`);
      else process.stdout.write(`ended ${ended.sessions} desk session(s), voided ${ended.links} unused login link(s)\n`);
    } finally {
      await store.close();
    }
  },
};

interface RedactionArgs extends StoreArgs {
  account: string;
  redact?: string;
}

/** --redact: undefined (not given: show), [] (`none`: clear) or distinct known policies. */
function parseRedact(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === 'none') return [];
  const names = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  for (const p of names)
    if (!(REDACTION_POLICIES as readonly string[]).includes(p))
      throw new Error(
        `--redact: ${JSON.stringify(p)} is not a policy; use a comma-separated list of ${REDACTION_POLICIES.join(', ')}, or none`,
      );
  if (names.length === 0) throw new Error(`--redact: name at least one of ${REDACTION_POLICIES.join(', ')}, or none`);
  return [...new Set(names)];
}

const setRedactionCommand: CommandModule<object, RedactionArgs> = {
  command: 'set-redaction',
  describe:
    "set or show an account's default redact policies: every session and batch job of the account gets them, whatever its request asks (a request may add policies, not remove these)",
  builder: (y) =>
    withStoreOptions(
      y.option('account', { type: 'string', demandOption: true }).option('redact', {
        type: 'string',
        describe: `comma-separated policies (${REDACTION_POLICIES.join(', ')}), or none to clear; without it the current default is printed`,
      }),
    ),
  handler: async (args) => {
    const policies = parseRedact(args.redact);
    const store = await openStore(storeSettingsFrom(args));
    try {
      if (!(await store.getAccount(args.account))) throw new Error(`NOT_FOUND: account ${args.account} does not exist`);
      if (policies !== undefined) await store.setRedactionDefault(args.account, policies, new Date());
      const now = await store.getRedactionDefault(args.account);
      process.stdout.write(`${JSON.stringify({ accountId: args.account, redact: now?.policies ?? [] })}\n`);
    } finally {
      await store.close();
    }
  },
};

export const accountsCommand: CommandModule = {
  command: 'accounts <command>',
  describe: 'manage accounts (create, credit, list, rotate-key, revoke-key, set-redaction, login-link, desk-logout)',
  builder: (y) =>
    y
      .command(createCommand)
      .command(creditCommand)
      .command(listCommand)
      .command(rotateCommand)
      .command(revokeCommand)
      .command(setRedactionCommand)
      .command(loginLinkCommand)
      .command(deskLogoutCommand)
      .demandCommand(1),
  handler: () => undefined,
};
