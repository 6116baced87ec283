#!/usr/bin/env node
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';

/** The `mockcloud` command. Each subcommand lives in its own module under src/cli/. */
export async function main(argv: string[]): Promise<void> {
  await yargs(hideBin(argv))
    .scriptName('mockcloud')
    .usage('$0 <command> [options]\n\nMany mock Triton compute nodes in one process.')
    .demandCommand(1, 'Name a command; see --help.')
    .strict()
    .help()
    .parseAsync();
}

main(process.argv).catch((err: unknown) => {
  console.error(`mockcloud: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
