/**
 * `mockcloud delete-servers UUID... | --count N | --all`: remove mock CNs everywhere: the CN
 * stops, its VMs are marked destroyed in VMAPI, its and its VMs' NICs go from NAPI, its CNAPI
 * record and its directory are deleted. Each Triton call is retried; a CN whose clean-up still
 * fails stays "deleting" (an error, exit 1) until the next delete of it or the daemon's next
 * start finishes it.
 */
import type { Argv, CommandModule } from 'yargs';
import { isUuid } from '../common/uuid.js';
import { daemonFor, UsageError } from './daemon-client.js';
import { computeNodes, deleteServers, deletingServers, listServers, newest } from './fleet-ops.js';
import { checkCount, Progress, jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface DeleteArgs extends DataDirArgs, JsonArgs {
  uuids?: string[];
  count?: number;
  all?: boolean;
}

function builder(y: Argv): Argv<DeleteArgs> {
  const out = y
    .positional('uuids', { type: 'string', array: true, describe: 'the CNs to delete' })
    .option('count', { type: 'number', describe: 'delete the N newest CNs instead' })
    .option('all', { type: 'boolean', describe: 'delete every CN instead' })
    .epilog('Name the CNs in exactly one way: UUIDs, --count N or --all. The dev DC\'s headnode server is never deleted.');
  return withJson(withDataDir(out), 'what was deleted') as Argv<DeleteArgs>;
}

async function handler(argv: DeleteArgs): Promise<void> {
  const uuids = (argv.uuids ?? []).map(String);
  const forms = [uuids.length > 0, argv.count !== undefined, argv.all === true].filter(Boolean).length;
  if (forms !== 1) throw new UsageError('name the CNs to delete in exactly one way: UUID..., --count N or --all');
  const badUuid = uuids.find((u) => !isUuid(u));
  if (badUuid !== undefined) throw new UsageError(`${JSON.stringify(badUuid)} is not a server UUID`);
  if (argv.count !== undefined) {
    const bad = checkCount('--count', argv.count, 1, Number.MAX_SAFE_INTEGER);
    if (bad) throw new UsageError(bad);
  }
  const daemon = await daemonFor(argv);
  let targets: string[];
  if (uuids.length > 0) {
    targets = [...new Set(uuids.map((u) => u.toLowerCase()))];
  } else {
    const list = computeNodes(await listServers(daemon));
    targets = argv.all ? list.map((s) => s.uuid) : newest(list, argv.count!).map((s) => s.uuid);
    // --all includes the removals an earlier run left unfinished.
    if (argv.all) targets.push(...(await deletingServers(daemon)).filter((u) => !targets.includes(u)));
  }
  const result = targets.length > 0 ? await deleteServers(daemon, targets, new Progress()) : { deleted: [], errors: [], gone: [] };
  if (argv.json) {
    process.stdout.write(jsonLine(result));
  } else {
    for (const d of result.deleted) process.stdout.write(`deleted ${d.uuid}${d.vms?.length ? ` (and its ${d.vms.length} VM(s))` : ''}\n`);
    if (targets.length === 0) process.stdout.write('no mock CNs to delete\n');
  }
  for (const d of result.deleted) for (const w of d.warnings) process.stderr.write(`mockcloud: warning: ${d.uuid}: ${w}\n`);
  for (const e of result.errors) process.stderr.write(`mockcloud: ${e.uuid}: ${e.message}\n`);
  if (result.errors.length > 0) process.exitCode = 1;
}

export const deleteServersCommand: CommandModule<object, DeleteArgs> = {
  command: 'delete-servers [uuids..]',
  describe: 'Delete mock CNs everywhere (VMs in VMAPI, NICs in NAPI, CNAPI record, dir): UUID..., --count N (newest) or --all',
  builder,
  handler,
};
