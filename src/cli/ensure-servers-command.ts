/**
 * `mockcloud ensure-servers N`: converge the running daemon on exactly N mock CNs, creating the
 * missing ones or deleting the newest (everywhere: VMs in VMAPI, NICs in NAPI, the CNAPI record,
 * the dir). Idempotent; exits non-zero unless the daemon hosts exactly N CNs at the end and no
 * removed CN is left "deleting" (its clean-up in Triton undone).
 * Used by smf/method/mockcloud-setup and tools/nightly-setup-hook.
 */
import type { Argv, CommandModule } from 'yargs';
import { MAX_CREATE_COUNT } from '../daemon/create-request.js';
import { CliError, daemonFor, UsageError } from './daemon-client.js';
import { computeNodes, createServers, deleteServers, deletingServers, listServers, newest, reportErrors } from './fleet-ops.js';
import { checkCount, Progress, jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';
import type { CreatedServer } from '../daemon/server-factory.js';
import { creationOptionsOf, withCreationOptions } from './create-servers-command.js';
import type { PlacementArgs } from './placement-options.js';

interface EnsureArgs extends DataDirArgs, JsonArgs, PlacementArgs {
  count: number;
  profile?: string;
  mix?: string;
  seed?: string;
  'hostname-prefix'?: string;
}

function builder(y: Argv): Argv<EnsureArgs> {
  const out = withCreationOptions(
    y.positional('count', { type: 'number', describe: `how many mock CNs there must be (0-${MAX_CREATE_COUNT})`, demandOption: true }),
    'the CNs created, if any',
  ).epilog('Creates the missing CNs, or deletes the newest ones (with their VMs in VMAPI, NICs in NAPI and CNAPI records). ' +
      'Running it again changes nothing. Exit 0 only when the daemon hosts exactly N CNs.');
  return withJson(withDataDir(out), '{daemon, want, before, after, created, deleted, errors, deleting}') as Argv<EnsureArgs>;
}

async function handler(argv: EnsureArgs): Promise<void> {
  const bad = checkCount('N', argv.count, 0, MAX_CREATE_COUNT);
  if (bad) throw new UsageError(bad);
  const want = argv.count;
  const createOptions = creationOptionsOf(argv);
  const daemon = await daemonFor(argv);
  // The nightly hook passes the DC's CNAPI in the environment; the CNs report to the daemon's.
  const envCnapi = process.env.MOCKCLOUD_CNAPI_URL?.replace(/\/+$/, '');
  if (envCnapi && daemon.info.urls.cnapi !== envCnapi) {
    process.stderr.write(`mockcloud: warning: MOCKCLOUD_CNAPI_URL is ${envCnapi}, but the daemon reports to ${daemon.info.urls.cnapi ?? 'no CNAPI'}\n`);
  }
  const before = computeNodes(await listServers(daemon));
  const progress = new Progress();
  const outcome: EnsureOutcome = {
    daemon: daemon.info.hostedBy ?? null,
    want,
    before: before.length,
    after: before.length,
    created: [],
    deleted: [],
    errors: [],
    deleting: [],
  };
  // Removals an earlier run left unfinished (NAPI, VMAPI or CNAPI failed then): finish them first.
  const pending = await deletingServers(daemon);
  if (pending.length > 0) {
    process.stderr.write(`finishing ${pending.length} earlier removal(s) whose clean-up in Triton was left undone\n`);
    const result = await deleteServers(daemon, pending, progress, { goneIsDone: true });
    outcome.deleted.push(...result.deleted.map((d) => d.uuid));
  }
  if (before.length < want) {
    process.stderr.write(`${before.length} mock CNs, want ${want}: creating ${want - before.length}\n`);
    const result = await createServers(daemon, want - before.length, createOptions, progress);
    outcome.created = result.created;
    outcome.errors.push(...result.errors.map((e) => ({ message: e.message })));
    reportErrors('create', result.errors);
  } else if (before.length > want) {
    const doomed = newest(before, before.length - want).map((s) => s.uuid);
    process.stderr.write(`${before.length} mock CNs, want ${want}: deleting the ${doomed.length} newest\n`);
    const result = await deleteServers(daemon, doomed, progress, { goneIsDone: true });
    if (result.gone.length > 0) process.stderr.write(`${result.gone.length} of them already gone (removed by another command meanwhile)\n`);
    for (const d of result.deleted) for (const w of d.warnings) process.stderr.write(`mockcloud: ${d.uuid}: ${w}\n`);
    outcome.deleted = result.deleted.map((d) => d.uuid);
    outcome.errors.push(...result.errors);
    reportErrors('delete', result.errors);
  }
  const after = computeNodes(await listServers(daemon));
  outcome.after = after.length;
  outcome.deleting = await deletingServers(daemon);
  if (argv.json) process.stdout.write(jsonLine(outcome));
  if (after.length !== want) {
    process.exitCode = 1;
    throw new CliError(`the daemon hosts ${after.length} mock CNs (besides any headnode server), not ${want}`);
  }
  if (outcome.deleting.length > 0) {
    // The count is right, but Triton still holds NICs, VMs or records of removed CNs.
    process.exitCode = 1;
    throw new CliError(
      `${want} mock CNs, but ${outcome.deleting.length} removed CN(s) are still "deleting" (their NAPI NICs, VMAPI VMs or ` +
        `CNAPI record could not be cleaned up; see the daemon's log): ${outcome.deleting.slice(0, 5).join(', ')}` +
        `${outcome.deleting.length > 5 ? ', ...' : ''}; run ensure-servers again, or the daemon finishes them at its next start`,
    );
  }
  if (!argv.json) process.stdout.write(`${want} mock CNs (${before.length === want ? 'nothing to do' : `were ${before.length}`})\n`);
}

/** What `ensure-servers -j` prints. */
interface EnsureOutcome {
  /** The daemon's CNs' sysinfo `Mockcloud Daemon` ("<id>@<host>"): how CNAPI tells its CNs from others'. */
  daemon: string | null;
  want: number;
  before: number;
  after: number;
  created: CreatedServer[];
  deleted: string[];
  errors: { uuid?: string; message: string }[];
  /** Removed CNs whose clean-up in Triton is still not done. */
  deleting: string[];
}

export const ensureServersCommand: CommandModule<object, EnsureArgs> = {
  command: 'ensure-servers <count>',
  describe: 'Converge on exactly N mock CNs (the dev headnode server not counted): create the missing ones or delete the newest',
  builder,
  handler,
};
