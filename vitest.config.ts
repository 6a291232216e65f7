import { configDefaults, defineConfig } from 'vitest/config';

// Files whose services run on the store under test: they run twice, once on SQLite (the
// embedded default) and once on PostgreSQL (SCRIBED_TEST_STORE=postgres, test/helpers/service.ts),
// so every behaviour the service shows is shown on both stores.
const BOTH_STORES = [
  'test/server/**/*.test.ts',
  'test/session/**/*.test.ts',
  // These copy a running node's data dir to stage a kill -9; on a shared PostgreSQL store the
  // copied node would still be writing. The PostgreSQL crash and failover path is tested
  // with real processes and fencing instead (docs/scaling.md).
  '!test/session/spool-recovery*.test.ts',
  'test/batch/runner.test.ts',
  'test/batch/batch-loudness.test.ts',
  'test/process/interpretation-cli.test.ts',
  'test/client/session-streamer.test.ts',
  'test/rtp/ingest.test.ts',
  'test/vad/vad-live.test.ts',
  // The API facades through the official SDKs (mapping.test.ts is pure: once is enough).
  'test/server/facades/openai.test.ts',
  'test/server/facades/deepgram.test.ts',
  'test/server/facades/deepgram-callback.test.ts',
  'test/server/facades/batch-wait.test.ts',
  'test/server/facades/deepgram-live.test.ts',
  'test/server/facades/deepgram-live-multichannel.test.ts',
  'test/server/facades/refused-uploads.test.ts',
  'test/server/facades/openai-realtime.test.ts',
  'test/server/facades/assemblyai-async.test.ts',
  'test/server/facades/assemblyai-streaming.test.ts',
  // The desk's login links and sessions (docs/desk.md).
  'test/desk/desk-auth.test.ts',
  // The desk's tickets are watch-only and end with its session, on every node.
  'test/desk/desk-revocation.test.ts',
  'test/process/redaction-default-cli.test.ts',
];

// Whole clusters under a rolling restart or upgrade (three nodes, HAProxy, live calls at real
// time): they measure drains and handovers, and a second test file beside them (two forks on
// two cores) slows the nodes' restarts until the calls end before the roll does. `npm test`
// runs them after everything else, one at a time (SCRIBED_TEST_SOLO=1, --no-file-parallelism).
const SOLO = ['test/process/rolling-restart.test.ts', 'test/process/rolling-upgrade.test.ts'];
const solo = process.env.SCRIBED_TEST_SOLO === '1';

export default defineConfig({
  test: {
    // One throwaway PostgreSQL cluster per project; test files get its URL via inject('postgresUrl').
    globalSetup: ['test/helpers/postgres-global-setup.ts'],
    // Integration tests start real servers and recognizers; two cores, so keep files in
    // sequence-friendly pools and give them time.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    projects: solo
      ? [{ extends: true, test: { name: 'solo', include: SOLO } }]
      : [
          { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SOLO] } },
          { extends: true, test: { name: 'postgres', include: BOTH_STORES, env: { SCRIBED_TEST_STORE: 'postgres' } } },
        ],
  },
});
