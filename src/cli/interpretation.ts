// `scribed interpretation fail-target|start-target|complete-target --target it_...`: the
// operator (and worker) interface to interpretation targets. Target processing runs outside
// this service; these commands move a target on the same data dir a running server uses
// (each is one transaction, on SQLite or on the PostgreSQL of --database-url). fail-target releases the cycle's reserved Characters.
import type { CommandModule } from 'yargs';
import { storeSettingsFrom, withStoreOptions, type StoreArgs } from './store-options.js';
import { openStore } from '../store/index.js';
import { targetView } from '../server/routes/interpretation.js';

interface TargetArgs extends StoreArgs {
  target: string;
}

function transition(
  command: string,
  to: 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED',
  describe: string,
): CommandModule<object, TargetArgs> {
  return {
    command,
    describe,
    builder: (y) => withStoreOptions(y.option('target', { type: 'string', demandOption: true, describe: 'target id (it_...)' })),
    handler: async (args) => {
      const store = await openStore(storeSettingsFrom(args));
      try {
        const target = await store.transitionInterpretationTarget(args.target, to, new Date());
        process.stdout.write(`${JSON.stringify({ projectId: target.projectId, ...targetView(target) })}\n`);
      } finally {
        await store.close();
      }
    },
  };
}

export const interpretationCommand: CommandModule = {
  command: 'interpretation <command>',
  describe: 'move interpretation targets (operator / worker interface)',
  builder: (y) =>
    y
      .command(
        transition(
          'fail-target',
          'FAILED_RELEASED',
          'mark a QUEUED or PROCESSING target FAILED_RELEASED and release its reserved Characters',
        ),
      )
      .command(transition('start-target', 'PROCESSING', 'mark a QUEUED target PROCESSING (a worker took it)'))
      .command(transition('complete-target', 'COMPLETED', 'mark a target COMPLETED; its reservation is consumed'))
      .demandCommand(1),
  handler: () => undefined,
};
