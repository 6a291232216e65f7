// `scribed retention`: an account's retention (docs/redaction.md). Transcripts older than
// --transcripts-days are erased by the sweeper every live node runs, and recordings
// (recordAudio, docs/recordings.md) older than --recordings-days are deleted by it while their
// transcripts stay. `none` keeps them until deleted. Without a days flag the command prints the current setting. Writes the
// same store a running server uses, as `scribed accounts` does.
import type { CommandModule } from 'yargs';
import { openStore } from '../store/index.js';
import { storeSettingsFrom, withStoreOptions, type StoreArgs } from './store-options.js';

interface RetentionArgs extends StoreArgs {
  account: string;
  'transcripts-days'?: string;
  'recordings-days'?: string;
}

/** A days flag: undefined (not given), null (`none`) or 1..36500. */
function parseDays(flag: string, value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 36_500)
    throw new Error(`--${flag} must be a whole number of days from 1 to 36500, or none; got ${value}`);
  return Number(value);
}

export const retentionCommand: CommandModule<object, RetentionArgs> = {
  command: 'retention',
  describe: "set or show an account's retention: transcripts (and, later, recordings) older than N days are erased",
  builder: (y) =>
    withStoreOptions(
      y
        .option('account', { type: 'string', demandOption: true })
        .option('transcripts-days', { type: 'string', describe: 'erase transcripts this many days after creation (none: keep)' })
        .option('recordings-days', { type: 'string', describe: 'the same for recordings, once they are kept (none: keep)' }),
    ),
  handler: async (args) => {
    const transcripts = parseDays('transcripts-days', args['transcripts-days']);
    const recordings = parseDays('recordings-days', args['recordings-days']);
    const store = await openStore(storeSettingsFrom(args));
    try {
      if (!(await store.getAccount(args.account))) throw new Error(`NOT_FOUND: account ${args.account} does not exist`);
      const current = await store.getRetention(args.account);
      if (transcripts !== undefined || recordings !== undefined) {
        await store.setRetention(
          args.account,
          {
            transcriptsDays: transcripts === undefined ? (current?.transcriptsDays ?? null) : transcripts,
            recordingsDays: recordings === undefined ? (current?.recordingsDays ?? null) : recordings,
          },
          new Date(),
        );
      }
      const now = await store.getRetention(args.account);
      process.stdout.write(
        `${JSON.stringify({ accountId: args.account, transcriptsDays: now?.transcriptsDays ?? null, recordingsDays: now?.recordingsDays ?? null })}\n`,
      );
    } finally {
      await store.close();
    }
  },
};
