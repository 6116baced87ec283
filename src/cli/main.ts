#!/usr/bin/env node
// First: it must run before anything loads restify (see the module).
import './quiet-deprecations.js';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { createServersCommand } from './create-servers-command.js';
import { daemonCommand } from './daemon-command.js';
import { headnodeCommand } from './headnode-command.js';
import { addExternalsCommand } from './add-externals-command.js';
import { deleteServersCommand } from './delete-servers-command.js';
import { ensureServersCommand } from './ensure-servers-command.js';
import { faultsCommand } from './faults-command.js';
import { listServersCommand } from './list-servers-command.js';
import { rescanCommand } from './rescan-command.js';
import { statusCommand } from './status-command.js';

/** The `mockcloud` command. Each subcommand lives in its own module under src/cli/. */
export async function main(argv: string[]): Promise<void> {
  await yargs(hideBin(argv))
    .scriptName('mockcloud')
    .usage('$0 <command> [options]\n\nMany mock Triton compute nodes in one process.')
    .command(daemonCommand)
    .command(headnodeCommand)
    .command(createServersCommand)
    .command(ensureServersCommand)
    .command(deleteServersCommand)
    .command(listServersCommand)
    .command(statusCommand)
    .command(addExternalsCommand)
    .command(rescanCommand)
    .command(faultsCommand)
    .demandCommand(1, 'Name a command; see --help.')
    .strict()
    .help()
    .fail((msg, err, y) => {
      if (err) throw err;
      y.showHelp('error');
      throw new Error(msg);
    })
    .parseAsync();
}

main(process.argv).catch((err: unknown) => {
  console.error(`mockcloud: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
