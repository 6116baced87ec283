/**
 * `mockcloud set-servers [--traits JSON] [--reserved[=false]] [--reservoir[=false]]
 * [--overprovision-ratios cpu=4,ram=1] (UUID... | --profile NAME | --all)`: set where DAPI may
 * place VMs on mock CNs, in CNAPI, as an operator's `sdc-server update` does (POST
 * /servers/:uuid, sdc-cnapi lib/endpoints/servers.js ServerUpdate), through the daemon.
 */
import type { Argv, CommandModule } from 'yargs';
import { isUuid } from '../common/uuid.js';
import { daemonFor, UsageError } from './daemon-client.js';
import { computeNodes, listServers } from './fleet-ops.js';
import { jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';
import { placementOf, withPlacement, type PlacementArgs } from './placement-options.js';

interface SetArgs extends DataDirArgs, JsonArgs, PlacementArgs {
  uuids?: string[];
  profile?: string;
  all?: boolean;
}

function builder(y: Argv): Argv<SetArgs> {
  const out = y
    .positional('uuids', { type: 'string', array: true, describe: 'the CNs to change' })
    .option('profile', { type: 'string', describe: 'every CN of this hardware profile (the headnode server never)' })
    .option('all', { type: 'boolean', describe: 'every CN of the daemon but the dev DC\'s headnode server' });
  return withJson(withDataDir(withPlacement(out, 'from now on')), 'the result')
    .example('$0 set-servers --reserved UUID', 'DAPI places no new VM on that CN')
    .example('$0 set-servers --reserved false --all', 'every CN takes VMs again')
    .example(`$0 set-servers --traits '{"ssd": true}' --profile storage`, 'only VMs asking for the ssd trait go to the storage CNs')
    .epilog('What DAPI reads when it allocates: CNAPI keeps these fields across CN restarts; create-servers sets them at creation from the profile and the same flags.') as unknown as Argv<SetArgs>;
}

async function handler(argv: SetArgs): Promise<void> {
  const placement = placementOf(argv);
  if (!placement) throw new UsageError('nothing to set: give --traits, --reserved, --reservoir or --overprovision-ratios');
  const uuids = (argv.uuids ?? []).map(String);
  const selectors = [uuids.length > 0, argv.profile !== undefined, argv.all === true].filter(Boolean).length;
  if (selectors !== 1) throw new UsageError('name the CNs: UUIDs, --profile NAME or --all (one of them)');
  const bad = uuids.find((u) => !isUuid(u));
  if (bad !== undefined) throw new UsageError(`${JSON.stringify(bad)} is not a server UUID`);
  const daemon = await daemonFor(argv);
  let targets = uuids;
  if (uuids.length === 0) {
    const cns = computeNodes(await listServers(daemon));
    targets = cns.filter((s) => argv.all === true || s.profile === argv.profile).map((s) => s.uuid);
    if (targets.length === 0) throw new UsageError(`no CN of this daemon has profile ${JSON.stringify(argv.profile)}`);
  }
  const result: { servers: { uuid: string; cnapi: Record<string, unknown> }[]; errors: { uuid: string; message: string }[] } = { servers: [], errors: [] };
  for (const uuid of targets) {
    const res = await daemon.request<{ uuid: string; cnapi: Record<string, unknown>; message?: string }>('POST', `/servers/${uuid}/placement`, placement);
    if (res.status === 200) result.servers.push(res.body);
    else result.errors.push({ uuid, message: res.body?.message ?? `HTTP ${res.status}` });
  }
  if (argv.json) process.stdout.write(jsonLine(result));
  else for (const s of result.servers) process.stdout.write(`${s.uuid}  ${JSON.stringify(s.cnapi)}\n`);
  for (const e of result.errors) process.stderr.write(`mockcloud: ${e.uuid}: ${e.message}\n`);
  if (result.errors.length > 0) process.exitCode = 1;
}

export const setServersCommand: CommandModule<object, SetArgs> = {
  command: 'set-servers [uuids..]',
  describe: "Set mock CNs' placement in CNAPI (traits, reserved, reservoir, overprovision ratios), as sdc-server update does",
  builder,
  handler,
};
