/**
 * `mockcloud create-servers N`: create N more mock CNs in the running daemon (found through
 * <data-dir>/daemon.json) via its control API, showing progress. Each CN gets an admin NIC from
 * NAPI, its server dir with sysinfo and agents, and starts at once.
 */
import type { Argv, CommandModule } from 'yargs';
import { MAX_CREATE_COUNT } from '../daemon/create-request.js';
import { daemonFor, UsageError } from './daemon-client.js';
import { createServers, printCreated, reportErrors, type CreateOptions } from './fleet-ops.js';
import { checkCount, Progress, jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';
import { placementOf, withPlacement, type PlacementArgs } from './placement-options.js';
import { parseMix } from '../daemon/fleet-mix.js';
import { MockcloudError } from '../common/errors.js';

interface CreateArgs extends DataDirArgs, JsonArgs, PlacementArgs {
  count: number;
  profile?: string;
  mix?: string;
  seed?: string;
  'hostname-prefix'?: string;
}

/** The options create-servers and ensure-servers share: profile or mix, seed, placement. */
export function creationOptionsOf(argv: CreateArgs | (Omit<CreateArgs, 'count'> & { count: number })): CreateOptions {
  if (argv.profile !== undefined && argv.mix !== undefined) throw new UsageError('give --profile or --mix, not both');
  const opts: CreateOptions = {};
  if (argv.profile !== undefined) opts.profile = argv.profile;
  if (argv.mix !== undefined) {
    try {
      opts.mix = parseMix(argv.mix);
    } catch (err) {
      throw new UsageError(`--mix: ${(err as MockcloudError).message}`);
    }
  }
  if (argv.seed !== undefined) {
    if (argv.seed === '') throw new UsageError('--seed must not be empty');
    opts.seed = String(argv.seed);
  }
  const placement = placementOf(argv);
  if (placement) opts.placement = placement;
  if (argv['hostname-prefix'] !== undefined) opts.hostnamePrefix = argv['hostname-prefix'];
  return opts;
}

/** The --profile, --mix and --seed options, worded for `what` (the CNs created). */
export function withCreationOptions<T>(y: Argv<T>, what: string): Argv<T & CreateArgs> {
  const out = y
    .option('profile', {
      type: 'string',
      describe: `hardware profile of ${what}: virtual (default; the original template), small, large, storage, or one of a profile file (mockcloud's GET /profiles lists them)`,
    })
    .option('mix', {
      type: 'string',
      describe: `a weighted mix of profiles for ${what}, e.g. small:70,large:25,storage:5: exact counts by largest remainder, order drawn at random (from --seed)`,
    })
    .option('seed', {
      type: 'string',
      describe: `seed of every random draw for ${what} (uuids, hostnames, serials, MACs, disk names, mix order); default: the daemon's --seed, else unpredictable`,
    })
    .option('hostname-prefix', { type: 'string', describe: `hostname prefix of ${what} (default VC): <prefix><first 8 hex of uuid>` });
  return withPlacement(out, `of ${what}, over the profile's`) as unknown as Argv<T & CreateArgs>;
}

function builder(y: Argv): Argv<CreateArgs> {
  const out = y.positional('count', { type: 'number', describe: `how many mock CNs to create (1-${MAX_CREATE_COUNT})`, demandOption: true });
  return withJson(withDataDir(withCreationOptions(out, 'the new CNs')), 'the created servers')
    .example('$0 create-servers 100 --mix small:70,large:25,storage:5 --seed 42', '70 small, 25 large and 5 storage CNs; the same CNs again in a fresh data dir run the same way')
    .example('$0 create-servers 2 --reserved', 'two CNs DAPI places nothing on') as unknown as Argv<CreateArgs>;
}

async function handler(argv: CreateArgs): Promise<void> {
  const bad = checkCount('N', argv.count, 1, MAX_CREATE_COUNT);
  if (bad) throw new UsageError(bad);
  const opts = creationOptionsOf(argv);
  const daemon = await daemonFor(argv);
  const result = await createServers(daemon, argv.count, opts, new Progress());
  if (argv.json) process.stdout.write(jsonLine(result));
  else printCreated(result.created);
  reportErrors('create', result.errors);
}

export const createServersCommand: CommandModule<object, CreateArgs> = {
  command: 'create-servers <count>',
  describe: 'Create N more mock CNs in the running daemon (admin NIC from NAPI, server dir, started at once); --profile or --mix, --seed, placement',
  builder,
  handler,
};
