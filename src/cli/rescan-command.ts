/**
 * `mockcloud rescan [UUID...]`: have the running daemon re-read CNs' VM files and sysinfo.json
 * after hand edits (all CNs when none is named); a changed sysinfo is registered with CNAPI again.
 */
import type { Argv, CommandModule } from 'yargs';
import { isUuid } from '../common/uuid.js';
import { daemonFor, UsageError } from './daemon-client.js';
import { jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface RescanArgs extends DataDirArgs, JsonArgs {
  uuids?: string[];
}

interface Rescanned {
  uuid: string;
  vms: number;
  sysinfoChanged: boolean;
}

function builder(y: Argv): Argv<RescanArgs> {
  const out = y.positional('uuids', { type: 'string', array: true, describe: 'the CNs to rescan (default: all)' });
  return withJson(withDataDir(out), 'the result') as Argv<RescanArgs>;
}

async function handler(argv: RescanArgs): Promise<void> {
  const uuids = (argv.uuids ?? []).map(String);
  const bad = uuids.find((u) => !isUuid(u));
  if (bad !== undefined) throw new UsageError(`${JSON.stringify(bad)} is not a server UUID`);
  const daemon = await daemonFor(argv);
  const result: { servers: Rescanned[]; errors: { uuid: string; message: string }[] } = { servers: [], errors: [] };
  if (uuids.length === 0) {
    Object.assign(result, await daemon.call<typeof result>('POST', '/rescan'));
  } else {
    for (const uuid of uuids) {
      const res = await daemon.request<Rescanned & { message?: string }>('POST', `/servers/${uuid}/rescan`);
      if (res.status === 200) result.servers.push(res.body);
      else result.errors.push({ uuid, message: res.body?.message ?? `HTTP ${res.status}` });
    }
  }
  if (argv.json) process.stdout.write(jsonLine(result));
  else {
    for (const s of result.servers) process.stdout.write(`${s.uuid}  ${s.vms} VM(s)${s.sysinfoChanged ? '  sysinfo changed, registered again' : ''}\n`);
  }
  for (const e of result.errors) process.stderr.write(`mockcloud: ${e.uuid}: ${e.message}\n`);
  if (result.errors.length > 0) process.exitCode = 1;
}

export const rescanCommand: CommandModule<object, RescanArgs> = {
  command: 'rescan [uuids..]',
  describe: "Re-read mock CNs' VM files and sysinfo.json after hand edits (all CNs by default)",
  builder,
  handler,
};
