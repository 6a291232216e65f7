// `scribed models list|pull|install`: the streaming models the sherpa-onnx engine can use.
// pull downloads a release archive; install takes an archive copied to an offline host.
// Both verify the archive's pinned SHA-256 before anything is extracted.
import type { Argv, CommandModule } from 'yargs';
import { modelsDirFromEnv } from '../config.js';
import { installModelFromArchive, listModels, ModelError, pullModel, type InstallResult } from '../engine/models.js';

/** SCRIBED_MODELS_DIR (read through src/config.ts), else ./models. */
export function defaultModelsDir(): string {
  return modelsDirFromEnv() ?? './models';
}

interface DirArgs {
  'models-dir'?: string;
}
interface PullArgs extends DirArgs {
  name: string;
}
interface InstallArgs extends DirArgs {
  name: string;
  archive: string;
  sha256?: string;
}

const log = (msg: string): void => {
  process.stderr.write(`${msg}\n`);
};

function withDir<T>(y: Argv<T>): Argv<T & DirArgs> {
  return y.option('models-dir', {
    type: 'string',
    describe: 'directory holding installed models [env SCRIBED_MODELS_DIR, default ./models]',
  }) as Argv<T & DirArgs>;
}

/** Model failures are operator errors: print the message alone and exit 1. */
async function run(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (!(err instanceof ModelError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  }
}

function report(res: InstallResult): void {
  const what = res.status === 'installed' ? 'installed' : 'already installed';
  process.stdout.write(`${res.name} ${what} in ${res.dir}\nuse it with: scribed serve --engine sherpa-onnx --model-dir ${res.dir}\n`);
}

const listCommand: CommandModule<object, DirArgs> = {
  command: 'list',
  describe: 'list known streaming models and whether each is installed',
  builder: (y) => withDir(y),
  handler: async (args) => {
    const modelsDir = args['models-dir'] ?? defaultModelsDir();
    const models = await listModels({ modelsDir });
    for (const m of models) {
      const state = m.installed ? `installed (${m.dir})` : 'not installed';
      const pin = m.sha256 === null ? 'no pinned sha256' : `sha256 ${m.sha256.slice(0, 12)}...`;
      process.stdout.write(`${m.name}\t${state}\t${pin}\n  ${m.description}\n  ${m.url}\n`);
    }
  },
};

const pullCommand: CommandModule<object, PullArgs> = {
  command: 'pull <name>',
  describe: 'download, verify (sha256) and install a model',
  builder: (y) => withDir(y.positional('name', { type: 'string', demandOption: true, describe: 'model name (see models list)' })),
  handler: (args) =>
    run(async () => {
      report(await pullModel(args.name, { modelsDir: args['models-dir'] ?? defaultModelsDir(), log }));
    }),
};

const installCommand: CommandModule<object, InstallArgs> = {
  command: 'install <name>',
  describe: 'verify (sha256) and install a model from an archive already on this machine',
  builder: (y) =>
    withDir(
      y
        .positional('name', { type: 'string', demandOption: true, describe: 'model name (see models list)' })
        .option('archive', { type: 'string', demandOption: true, describe: 'the release .tar.bz2 file' })
        .option('sha256', {
          type: 'string',
          describe: 'expected sha256 of the archive, for a catalog entry without a pinned one (check it against the release page)',
        }),
    ),
  handler: (args) =>
    run(async () => {
      report(
        await installModelFromArchive(args.name, args.archive, {
          modelsDir: args['models-dir'] ?? defaultModelsDir(),
          log,
          ...(args.sha256 !== undefined ? { expectedSha256: args.sha256 } : {}),
        }),
      );
    }),
};

export const modelsCommand: CommandModule = {
  command: 'models',
  describe: 'list, download or install streaming models for the sherpa-onnx engine',
  builder: (y) =>
    y.command(listCommand).command(pullCommand).command(installCommand).demandCommand(1, 'name a models command: list, pull, install'),
  handler: () => {},
};
