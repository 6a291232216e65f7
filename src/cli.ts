#!/usr/bin/env node
// scribed: the operator's command line. One file per command under src/cli/.
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { serveCommand } from './cli/serve.js';
import { accountsCommand } from './cli/accounts.js';
import { modelsCommand } from './cli/models.js';
import { interpretationCommand } from './cli/interpretation.js';
import { streamCommand } from './cli/stream.js';
import { rtpCommand } from './cli/rtp.js';
import { gatewayCommand } from './cli/gateway.js';
import { retentionCommand } from './cli/retention.js';
import { drainCommand } from './cli/drain.js';

// yargs reads a lone `-` as a positional argument; `--input -` (stdin) is an option value.
const argv = hideBin(process.argv).flatMap((a, i, all) =>
  a === '-' && all[i - 1] === '--input' ? [] : a === '--input' && all[i + 1] === '-' ? ['--input=-'] : [a],
);

const COMMANDS = [
  serveCommand,
  accountsCommand,
  modelsCommand,
  interpretationCommand,
  streamCommand,
  rtpCommand,
  gatewayCommand,
  retentionCommand,
  drainCommand,
].map((c) => String(c.command).split(' ')[0]!);

/** `scribed CMD --help` for a known command, else `scribed --help`. */
function helpCommand(): string {
  const first = argv[0];
  return first !== undefined && COMMANDS.includes(first) ? `scribed ${first} --help` : 'scribed --help';
}

await yargs(argv)
  .scriptName('scribed')
  .command(serveCommand)
  .command(accountsCommand)
  .command(modelsCommand)
  .command(interpretationCommand)
  .command(streamCommand)
  .command(rtpCommand)
  .command(gatewayCommand)
  .command(retentionCommand)
  .command(drainCommand)
  .demandCommand(1, 'name a command: serve, accounts, models, interpretation, stream, rtp, gateway, retention, drain')
  .strict()
  .help()
  // A usage error is one line and a pointer to --help, not the whole help: the line that
  // says what is wrong must not scroll away.
  .showHelpOnFail(false)
  .fail((msg, err) => {
    process.stderr.write(`${err ? err.message : msg}\n`);
    if (!err) process.stderr.write(`run \`${helpCommand()}\` for the options\n`);
    process.exit(2);
  })
  .parseAsync();
