/**
 * `mockcloud list-servers [-j]`: every mock CN of a data dir with its admin IP, cn-agent
 * address, VM count and CNAPI status. From the running daemon when there is one; otherwise
 * read from the data dir (no agent address then: nothing listens). The status comes from CNAPI
 * `GET /servers` when CNAPI answers, else "-".
 */
import { promises as fsp } from 'node:fs';
import type { Argv, CommandModule } from 'yargs';
import { isProcessAlive, readDaemonJson } from '../daemon/daemon-json.js';
import { serverPaths } from '../mockcn/layout.js';
import { scanServers } from '../mockcn/server-dir.js';
import { adminNicOf, readSysinfoFile } from '../mockcn/sysinfo-file.js';
import { isHeadnodeSysinfo } from '../mockcn/sysinfo-template.js';
import { cnapiStatuses, cnapiUrlFor } from './cnapi-view.js';
import { clientDataDir, DaemonClient } from './daemon-client.js';
import { listServers, type ServerSummary } from './fleet-ops.js';
import { withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface ListArgs extends DataDirArgs, JsonArgs {
  'cnapi-url'?: string;
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
}

function builder(y: Argv): Argv<ListArgs> {
  const out = y.option('cnapi-url', {
    type: 'string',
    describe: "CNAPI to ask for each CN's status when no daemon runs (env MOCKCLOUD_CNAPI_URL; default: the daemon's, or <data-dir>/headnode.json)",
  });
  return withJson(withDataDir(out), 'a list of {uuid, hostname, adminIp, agentAddress, vms, status, headnode}') as Argv<ListArgs>;
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
    });
  }
  return out;
}

async function handler(argv: ListArgs): Promise<void> {
  const dataDir = clientDataDir(argv['data-dir']);
  const info = await readDaemonJson(dataDir);
  const live = info && isProcessAlive(info.pid) ? info : undefined;
  const servers = live ? await listServers(new DaemonClient(live)) : await offlineServers(dataDir);
  if (!live) process.stderr.write(`mockcloud: no daemon runs for ${dataDir}; listing the data dir\n`);
  const statuses = await cnapiStatuses(await cnapiUrlFor(dataDir, live, argv['cnapi-url']));
  const rows: ListedServer[] = servers
    .map((s) => ({
      uuid: s.uuid,
      hostname: s.hostname,
      adminIp: s.adminIp,
      agentAddress: s.agentAddress ? `${s.agentAddress.ip}:${s.agentAddress.port}` : null,
      vms: s.vms,
      status: statuses?.get(s.uuid) ?? null,
      headnode: s.headnode === true,
    }))
    .sort((a, b) => Number(b.headnode) - Number(a.headnode) || a.hostname.localeCompare(b.hostname) || a.uuid.localeCompare(b.uuid));
  if (argv.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  const table = [
    ['UUID', 'HOSTNAME', 'ADMIN IP', 'CN-AGENT', 'VMS', 'STATUS', 'ROLE'],
    ...rows.map((r) => [r.uuid, r.hostname, r.adminIp ?? '-', r.agentAddress ?? '-', String(r.vms), r.status ?? '-', r.headnode ? 'headnode' : 'cn']),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) process.stdout.write(`${row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')}\n`);
}

export const listServersCommand: CommandModule<object, ListArgs> = {
  command: 'list-servers',
  describe: 'List the mock CNs (the dev headnode server first): uuid, hostname, admin IP, cn-agent address, VM count, CNAPI status, role (works without a daemon)',
  builder,
  handler,
};
