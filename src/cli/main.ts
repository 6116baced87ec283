#!/usr/bin/env node
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { createServersCommand } from './create-servers-command.js';
import { daemonCommand } from './daemon-command.js';

/** The `mockcloud` command. Each subcommand lives in its own module under src/cli/. */
export async function main(argv: string[]): Promise<void> {
  await yargs(hideBin(argv))
    .scriptName('mockcloud')
    .usage('$0 <command> [options]\n\nMany mock Triton compute nodes in one process.')
    .command(daemonCommand)
    .command(createServersCommand)
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
