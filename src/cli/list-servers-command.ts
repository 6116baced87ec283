/**
 * `mockcloud list-servers [-H] [-o COLUMNS] [-s SORT] [-l] [-j]`: every mock CN of a data dir
 * with its admin IP, cn-agent address, VM count and CNAPI status, as `triton` and `sdcadm` list
 * things (src/cli/table.ts). From the running daemon when there is one; otherwise read from the
 * data dir (no agent address then: nothing listens). The status comes from CNAPI
 * `GET /servers` when CNAPI answers, else "-".
 */
import { promises as fsp } from 'node:fs';
import type { Argv, CommandModule } from 'yargs';
import { isProcessAlive, readDaemonJson } from '../daemon/daemon-json.js';
import { serverPaths } from '../mockcn/layout.js';
import { scanServers } from '../mockcn/server-dir.js';
import { adminNicOf, DAEMON_SYSINFO_KEY, readSysinfoFile } from '../mockcn/sysinfo-file.js';
import { isHeadnodeSysinfo } from '../mockcn/sysinfo-template.js';
import { readProfileName } from '../mockcn/profile-record.js';
import { cnapiServers, cnapiStatuses, cnapiUrlFor } from './cnapi-view.js';
import { clientDataDir, CliError, DaemonClient, daemonLine } from './daemon-client.js';
import { describeSystemError } from '../common/system-errors.js';
import { listServers, type ServerSummary } from './fleet-ops.js';
import { withDataDir, type DataDirArgs } from './options.js';
import { formatTable, jsonLines, sortOf, sortRows, withTableOptions, type TableArgs, type TableSpec } from './table.js';

interface ListArgs extends DataDirArgs, TableArgs {
  'cnapi-url'?: string;
  'all-daemons'?: boolean;
}

export interface ListedServer {
  uuid: string;
  hostname: string;
  adminIp: string | null;
  /** "ip:port" of its cn-agent; null when the daemon is not running. */
  agentAddress: string | null;
  vms: number;
  /** CNAPI's status (running, unknown, ...), or null when CNAPI was not reachable or lacks the CN. */
  status: string | null;
  /** The dev DC's headnode server (from its sysinfo's `headnode=true` boot parameter). */
  headnode: boolean;
  /** "headnode" or "cn": the ROLE column. */
  role: 'headnode' | 'cn';
  /** The hardware profile it was made with; null when unknown (another daemon's CN). */
  profile: string | null;
  /** When it was created (sysinfo "Zpool Creation"), ISO 8601; null when unknown. */
  created: string | null;
  /** The daemon hosting it: sysinfo `Mockcloud Daemon` ("<daemon id>@<host>"); null when unknown. */
  daemon: string | null;
  /** How old the CN's config from SAPI is (config-agent's last check): "42s", "stale 9m"; null when unknown. */
  config: string | null;
}

/** What list-servers offers: every field of a row, by its JSON name. */
export const LIST_TABLE: TableSpec = {
  columns: [
    { field: 'uuid', header: 'UUID' },
    { field: 'hostname', header: 'HOSTNAME' },
    { field: 'adminIp', header: 'ADMIN IP' },
    { field: 'agentAddress', header: 'CN-AGENT' },
    { field: 'vms', header: 'VMS', align: 'right' },
    { field: 'status', header: 'STATUS' },
    { field: 'role', header: 'ROLE' },
    { field: 'profile', header: 'PROFILE' },
    { field: 'created', header: 'CREATED' },
    { field: 'headnode', header: 'HEADNODE' },
    { field: 'daemon', header: 'DAEMON' },
    { field: 'config', header: 'CONFIG' },
  ],
  defaults: ['uuid', 'hostname', 'adminIp', 'agentAddress', 'vms', 'status', 'role', 'profile'],
  long: ['uuid', 'hostname', 'adminIp', 'agentAddress', 'vms', 'status', 'role', 'profile', 'created', 'daemon'],
  // The dev DC's headnode server first, then by hostname (uuid breaks ties).
  sort: ['-headnode', 'hostname', 'uuid'],
};

/** `--all-daemons`: every mock CN CNAPI knows, with the daemon hosting it. */
export const ALL_DAEMONS_TABLE: TableSpec = {
  ...LIST_TABLE,
  defaults: ['uuid', 'hostname', 'adminIp', 'status', 'role', 'daemon'],
  sort: ['daemon', '-headnode', 'hostname', 'uuid'],
};

function builder(y: Argv): Argv<ListArgs> {
  const out = y
    .option('cnapi-url', {
      type: 'string',
      describe: "CNAPI to ask for each CN's status when no daemon runs (env MOCKCLOUD_CNAPI_URL; default: the daemon's, or <data-dir>/headnode.json)",
    })
    .option('all-daemons', {
      type: 'boolean',
      describe: "every mock CN CNAPI knows, whichever daemon hosts it (from each CN's sysinfo 'Mockcloud Daemon'), not only this daemon's",
    });
  return withTableOptions(withDataDir(out), LIST_TABLE, 'one {uuid, hostname, adminIp, agentAddress, vms, status, headnode, role, profile, created, daemon, config} per line')
    .example('$0 list-servers -H -o uuid', 'one uuid per line')
    .example('$0 list-servers -s -vms -o hostname,vms', 'the CNs with the most VMs first') as Argv<ListArgs>;
}

/** The CNs on disk, for when no daemon runs. Broken server dirs are listed with what is known. */
async function offlineServers(dataDir: string): Promise<ServerSummary[]> {
  const scan = await scanServers(dataDir);
  const out: ServerSummary[] = [];
  for (const uuid of scan.servers) {
    const paths = serverPaths(dataDir, uuid);
    const sysinfo = await readSysinfoFile(paths.sysinfo, uuid).catch(() => undefined);
    const vmFiles = await fsp.readdir(paths.vms).catch(() => [] as string[]);
    out.push({
      uuid,
      hostname: sysinfo ? String(sysinfo.Hostname ?? '') : '?',
      adminIp: sysinfo ? (adminNicOf(sysinfo).ip ?? null) : null,
      agentAddress: null,
      registered: false,
      vms: vmFiles.filter((f) => /^[0-9a-f-]{36}\.json$/.test(f)).length,
      createdAt: typeof sysinfo?.['Zpool Creation'] === 'number' ? sysinfo['Zpool Creation'] : null,
      headnode: sysinfo ? isHeadnodeSysinfo(sysinfo) : false,
      ...(sysinfo ? { profile: await readProfileName(paths.dir, sysinfo) } : {}),
    });
  }
  return out;
}

async function handler(argv: ListArgs): Promise<void> {
  const table = argv['all-daemons'] ? ALL_DAEMONS_TABLE : LIST_TABLE;
  // Checked before anything is read: a bad -o or -s is a usage error whatever the fleet.
  const sort = sortOf(table, argv);
  if (!argv.json) formatTable(table, argv, []);
  const dataDir = clientDataDir(argv['data-dir']);
  const info = await readDaemonJson(dataDir);
  const live = info && isProcessAlive(info.pid) ? info : undefined;
  if (argv['all-daemons']) {
    const rows = sortRows(await allDaemonsRows(await cnapiUrlFor(dataDir, live, argv['cnapi-url'])), sort);
    process.stdout.write(argv.json ? jsonLines(rows) : formatTable(table, argv, rows));
    return;
  }
  const servers = live ? await listServers(new DaemonClient(live)) : await offlineServers(dataDir);
  if (!live) process.stderr.write(`mockcloud: no daemon runs for ${dataDir}; listing the data dir\n`);
  else if (!argv.json) process.stderr.write(`${daemonLine(live)}\n`);
  const statuses = await cnapiStatuses(await cnapiUrlFor(dataDir, live, argv['cnapi-url']));
  const rows: ListedServer[] = sortRows(
    servers.map((s) => ({
      uuid: s.uuid,
      hostname: s.hostname,
      adminIp: s.adminIp,
      agentAddress: s.agentAddress ? `${s.agentAddress.ip}:${s.agentAddress.port}` : null,
      vms: s.vms,
      status: statuses?.get(s.uuid) ?? null,
      headnode: s.headnode === true,
      role: s.headnode === true ? 'headnode' : 'cn',
      profile: s.profile ?? null,
      created: typeof s.createdAt === 'number' ? new Date(s.createdAt * 1000).toISOString() : null,
      daemon: live?.hostedBy ?? null,
      config: configAge(s),
    })),
    sort,
  );
  process.stdout.write(argv.json ? jsonLines(rows) : formatTable(LIST_TABLE, argv, rows));
}

/** config-agent's view of a CN: its config's age, "stale" when a check is overdue, "-" before the first. */
function configAge(s: ServerSummary): string | null {
  if (s.configAgeSeconds === undefined) return null;
  if (s.configAgeSeconds === null) return s.configStale ? 'stale' : '-';
  const t = s.configAgeSeconds;
  const age = t < 120 ? `${t}s` : t < 7200 ? `${Math.round(t / 60)}m` : `${Math.round(t / 3600)}h`;
  return s.configStale ? `stale ${age}` : age;
}

/** Every mock CN CNAPI lists ("System Type" Virtual), as rows, with the daemon hosting each. */
async function allDaemonsRows(cnapi: string | undefined): Promise<ListedServer[]> {
  if (!cnapi) throw new CliError('no CNAPI to ask: no daemon runs here with a CNAPI, and no --cnapi-url / MOCKCLOUD_CNAPI_URL');
  let servers;
  try {
    servers = await cnapiServers(cnapi, { sysinfo: true, vms: true });
  } catch (err) {
    throw new CliError(`cannot list servers in CNAPI at ${cnapi}: ${describeSystemError((err as Error).cause ?? err)}`);
  }
  return servers
    .filter((s) => s.sysinfo?.['System Type'] === 'Virtual')
    .map((s) => {
      const si = s.sysinfo ?? {};
      const ip = si['CN Agent IP'];
      const port = si['CN Agent Port'];
      const zpoolCreation = si['Zpool Creation'];
      return {
        uuid: s.uuid,
        hostname: s.hostname ?? String(si.Hostname ?? ''),
        adminIp: typeof si['Admin IP'] === 'string' ? si['Admin IP'] : null,
        agentAddress: typeof ip === 'string' && port !== undefined ? `${ip}:${String(port)}` : null,
        vms: s.vms ? Object.keys(s.vms).length : 0,
        status: s.status ?? null,
        headnode: s.headnode === true,
        role: s.headnode === true ? 'headnode' : 'cn',
        profile: null,
        created: typeof zpoolCreation === 'number' ? new Date(zpoolCreation * 1000).toISOString() : null,
        daemon: typeof si[DAEMON_SYSINFO_KEY] === 'string' ? (si[DAEMON_SYSINFO_KEY] as string) : null,
        config: null,
      } satisfies ListedServer;
    });
}

export const listServersCommand: CommandModule<object, ListArgs> = {
  command: 'list-servers',
  describe: 'List the mock CNs (the dev headnode server first): uuid, hostname, admin IP, cn-agent address, VM count, CNAPI status, role, profile (works without a daemon); -H, -o, -s, -l, -j',
  builder,
  handler,
};
