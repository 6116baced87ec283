/**
 * `mockcloud create-servers N`: create N more mock CNs in the running daemon (found through
 * <data-dir>/daemon.json) via its control API, showing progress. Each CN gets an admin NIC from
 * NAPI, its server dir with sysinfo and agents, and starts at once.
 */
import type { Argv, CommandModule } from 'yargs';
import { MAX_CREATE_COUNT } from '../daemon/server-factory.js';
import { clientDataDir, findDaemon, UsageError } from './daemon-client.js';
import { createServers, printCreated, reportErrors } from './fleet-ops.js';
import { checkCount, Progress, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface CreateArgs extends DataDirArgs, JsonArgs {
  count: number;
  profile?: string;
  'hostname-prefix'?: string;
}

function builder(y: Argv): Argv<CreateArgs> {
  const out = y
    .positional('count', { type: 'number', describe: `how many mock CNs to create (1-${MAX_CREATE_COUNT})`, demandOption: true })
    .option('profile', { type: 'string', describe: 'hardware profile: virtual (default; the original template), small, large' })
    .option('hostname-prefix', { type: 'string', describe: 'hostname prefix (default VC): <prefix><first 8 hex of uuid>' });
  return withJson(withDataDir(out), 'the created servers') as Argv<CreateArgs>;
}

async function handler(argv: CreateArgs): Promise<void> {
  const bad = checkCount('N', argv.count, 1, MAX_CREATE_COUNT);
  if (bad) throw new UsageError(bad);
  const daemon = await findDaemon(clientDataDir(argv['data-dir']));
  const result = await createServers(
    daemon,
    argv.count,
    {
      ...(argv.profile !== undefined ? { profile: argv.profile } : {}),
      ...(argv['hostname-prefix'] !== undefined ? { hostnamePrefix: argv['hostname-prefix'] } : {}),
    },
    new Progress(),
  );
  if (argv.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else printCreated(result.created);
  reportErrors('create', result.errors);
}

export const createServersCommand: CommandModule<object, CreateArgs> = {
  command: 'create-servers <count>',
  describe: 'Create N more mock CNs in the running daemon (admin NIC from NAPI, server dir, started at once)',
  builder,
  handler,
};
