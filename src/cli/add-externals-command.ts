/**
 * `mockcloud add-externals`: give every mock CN lacking one an external NIC, as the original
 * tools/add_externals.sh did (cn-agent-spec §8.6): for each "Virtual" server CNAPI lists whose
 * dnet1 does not provide `external`, CNAPI `PUT /servers/<uuid>/nics` with
 * `{action: 'update', nics: [{mac: <dnet1 MAC>, nic_tags_provided: ['external']}]}`; CNAPI's
 * server-update-nics job has the CN's cn-agent run `server_update_nics`, which rewrites the
 * CN's sysinfo and registers it again. The command waits until CNAPI's sysinfo shows the tag
 * (what `sdc-waitforjob` waited for). With a running daemon only its CNs are touched.
 */
import type { Argv, CommandModule } from 'yargs';
import { mapLimit } from '../daemon/concurrency.js';
import { isProcessAlive, readDaemonJson } from '../daemon/daemon-json.js';
import { cnapiServers, cnapiUrlFor, type CnapiServer } from './cnapi-view.js';
import { clientDataDir, CliError, daemonLine, UsageError } from './daemon-client.js';
import { Progress, jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface AddExternalsArgs extends DataDirArgs, JsonArgs {
  'cnapi-url'?: string;
  timeout: number;
}

const EXTERNAL_NIC = 'dnet1';

function builder(y: Argv): Argv<AddExternalsArgs> {
  const out = y
    .option('cnapi-url', { type: 'string', describe: "CNAPI (env MOCKCLOUD_CNAPI_URL; default: the running daemon's)" })
    .option('timeout', { type: 'number', default: 60, describe: 'seconds to wait, in all, until CNAPI shows every CN with its external NIC' });
  return withJson(withDataDir(out), '{added, already, errors}') as Argv<AddExternalsArgs>;
}

function dnet1(server: CnapiServer): { mac?: string; tags: string[] } | undefined {
  const nics = server.sysinfo?.['Network Interfaces'] as Record<string, { 'MAC Address'?: string; 'NIC Names'?: string[] }> | undefined;
  const nic = nics?.[EXTERNAL_NIC];
  if (!nic) return undefined;
  return { ...(nic['MAC Address'] ? { mac: nic['MAC Address'] } : {}), tags: Array.isArray(nic['NIC Names']) ? nic['NIC Names'] : [] };
}

async function addExternal(cnapi: string, server: CnapiServer, mac: string, deadline: number): Promise<void> {
  const res = await fetch(`${cnapi}/servers/${server.uuid}/nics`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'update', nics: [{ mac, nic_tags_provided: ['external'] }] }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json().catch(() => ({}))) as { job_uuid?: string; message?: string; code?: string };
  if (res.status !== 202 && res.status !== 200) {
    throw new Error(`CNAPI PUT /servers/${server.uuid}/nics: ${res.status}${body.code ? ` ${body.code}` : ''}${body.message ? `: ${body.message}` : ''}`);
  }
  // Wait for the job's effect: CNAPI's sysinfo of the CN provides `external` on dnet1.
  for (;;) {
    const got = await fetch(`${cnapi}/servers/${server.uuid}`, { signal: AbortSignal.timeout(15_000) });
    if (got.ok) {
      const s = (await got.json()) as CnapiServer;
      if (dnet1(s)?.tags.includes('external')) return;
    }
    if (Date.now() > deadline) throw new Error(`job ${body.job_uuid ?? '?'}: CNAPI did not show an external NIC in time`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function handler(argv: AddExternalsArgs): Promise<void> {
  if (!(argv.timeout > 0)) throw new UsageError('--timeout must be a number of seconds > 0');
  const dataDir = clientDataDir(argv['data-dir']);
  const info = await readDaemonJson(dataDir);
  const live = info && isProcessAlive(info.pid) ? info : undefined;
  if (live) process.stderr.write(`${daemonLine(live)}\n`);
  const cnapi = await cnapiUrlFor(dataDir, live, argv['cnapi-url']);
  if (!cnapi) {
    throw new CliError(`no CNAPI to ask: no daemon runs for ${dataDir} with a CNAPI, and no --cnapi-url / MOCKCLOUD_CNAPI_URL`);
  }
  let servers: CnapiServer[];
  try {
    servers = await cnapiServers(cnapi, { sysinfo: true });
  } catch (err) {
    throw new CliError(`cannot list servers in CNAPI at ${cnapi}: ${(err as Error).message}`);
  }
  const ours = live ? new Set(Object.keys(live.servers)) : undefined;
  const todo: { server: CnapiServer; mac: string }[] = [];
  let have = 0;
  for (const s of servers) {
    if (s.sysinfo?.['System Type'] !== 'Virtual') continue;
    if (ours && !ours.has(s.uuid)) continue;
    const nic = dnet1(s);
    if (!nic?.mac) continue;
    if (nic.tags.includes('external')) have++;
    else todo.push({ server: s, mac: nic.mac });
  }
  const progress = new Progress();
  progress.start('tagged', todo.length);
  const errors: string[] = [];
  const added: string[] = [];
  let done = 0;
  const deadline = Date.now() + argv.timeout * 1000;
  await mapLimit(todo, 8, async ({ server, mac }) => {
    try {
      await addExternal(cnapi, server, mac, deadline);
      added.push(server.uuid);
      done++;
    } catch (err) {
      errors.push(`${server.uuid}: ${(err as Error).message}`);
    }
    progress.update(done, errors.length);
  });
  progress.stop();
  for (const e of errors) process.stderr.write(`mockcloud: ${e}\n`);
  if (argv.json) process.stdout.write(jsonLine({ added: added.sort(), already: have, errors }));
  else process.stdout.write(`added an external NIC to ${done} mock CN(s); ${have} had one already${errors.length ? `; ${errors.length} failed` : ''}\n`);
  if (errors.length > 0) process.exitCode = 1;
}

export const addExternalsCommand: CommandModule<object, AddExternalsArgs> = {
  command: 'add-externals',
  describe: 'Tag dnet1 of every mock CN lacking one as an external NIC, through CNAPI (like the original add_externals.sh)',
  builder,
  handler,
};
