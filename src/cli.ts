#!/usr/bin/env node
// scribed: the operator's command line. One file per command under src/cli/.
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { serveCommand } from './cli/serve.js';
import { accountsCommand } from './cli/accounts.js';
import { modelsCommand } from './cli/models.js';
import { rtpCommand } from './cli/rtp.js';

await yargs(hideBin(process.argv))
  .scriptName('scribed')
  .command(serveCommand)
  .command(accountsCommand)
  .command(modelsCommand)
  .command(rtpCommand)
  .demandCommand(1, 'name a command: serve, accounts, models, rtp')
  .strict()
  .help()
  .fail((msg, err, y) => {
    process.stderr.write(`${err ? err.message : msg}\n`);
    if (!err) process.stderr.write(`\n${y.help()}\n`);
    process.exit(2);
  })
  .parseAsync();
