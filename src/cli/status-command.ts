/**
 * `mockcloud status [-j]`: the running daemon's health: CNs, heartbeats per second, tasks in
 * flight, errors by kind, the Triton it reports to. Needs the daemon (it is the daemon's
 * state); says so plainly when none runs.
 */
import type { Argv, CommandModule } from 'yargs';
import { clientDataDir, findDaemon } from './daemon-client.js';
import { jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface StatusArgs extends DataDirArgs, JsonArgs {}

interface DaemonStatus {
  pid: number;
  version: string;
  /** The build (absent from older daemons). */
  gitSha?: string | null;
  buildTime?: string | null;
  state: string;
  uptimeSeconds: number;
  dataDir: string;
  urls: Record<string, string | undefined>;
  /** The live fleet page's URL (absent from older daemons; null with --ui-address none). */
  ui?: string | null;
  servers: number;
  registered: number;
  /** CNs by hardware profile (absent from older daemons). */
  profiles?: Record<string, number>;
  seed?: string | null;
  heartbeatsPerSecond: number;
  statusReportsPerSecond: number;
  tasksInFlight: number;
  errors: Record<string, number>;
  cnapi?: { standalone: boolean; failingServers?: Record<string, number> };
  cnAgent?: { tasks?: Record<string, number>; faults?: number };
  memory?: { rssBytes: number; heapUsedBytes?: number; heapTotalBytes?: number };
  agents?: Record<string, Record<string, number> | undefined>;
  /** How the CNs boot (absent from older daemons). */
  boot?: {
    booter: { dhcp: { ip: string; port: number }; http?: string; circuitId?: string } | null;
    paths?: { booter: number; direct: number; notBooted: number };
    booting?: number;
  };
}

function builder(y: Argv): Argv<StatusArgs> {
  return withJson(withDataDir(y), "the daemon's whole status document") as Argv<StatusArgs>;
}

async function handler(argv: StatusArgs): Promise<void> {
  // Its output names the daemon (pid, data dir) itself.
  const daemon = await findDaemon(clientDataDir(argv['data-dir']));
  const s = await daemon.call<DaemonStatus>('GET', '/status');
  if (argv.json) {
    process.stdout.write(jsonLine(s));
    return;
  }
  const errors = Object.entries(s.errors ?? {});
  const failing = Object.entries(s.cnapi?.failingServers ?? {}).filter(([, n]) => n > 0);
  const tasks = s.cnAgent?.tasks ?? {};
  const lines = [
    `daemon:            pid ${s.pid}, ${s.state}, up ${s.uptimeSeconds}s, version ${s.version}${s.gitSha ? ` (git ${s.gitSha.slice(0, 12)}, built ${s.buildTime ?? 'unknown'})` : ''}`,
    `data dir:          ${s.dataDir}`,
    `mock CNs:          ${s.servers} (${s.registered} registered)`,
    ...(s.profiles ? [`profiles:          ${Object.entries(s.profiles).map(([k, v]) => `${k} ${v}`).join(', ') || '-'}`] : []),
    ...(s.seed ? [`seed:              ${s.seed}`] : []),
    `heartbeats/s:      ${s.heartbeatsPerSecond}`,
    `status reports/s:  ${s.statusReportsPerSecond}`,
    `tasks in flight:   ${s.tasksInFlight}`,
    `tasks:             ${Object.entries(tasks).map(([k, v]) => `${k} ${v}`).join(', ') || '-'}`,
    `fault rules:       ${s.cnAgent?.faults ?? 0}`,
    `CNAPI:             ${s.urls?.cnapi ?? 'none'}${s.cnapi?.standalone ? ' (standalone)' : ''}`,
    ...(s.ui !== undefined ? [`fleet page:        ${s.ui ?? 'none'}`] : []),
    `CNs failing CNAPI: ${failing.length ? failing.map(([k, v]) => `${k} ${v}`).join(', ') : 'none'}`,
    `errors:            ${errors.length ? errors.map(([k, v]) => `${k} ${v}`).join(', ') : 'none'}`,
    ...bootLine(s),
    ...sapiLine(s),
    ...(s.memory ? [`memory:            ${memoryLine(s.memory)}`] : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Where the CNs boot from, and which path each CN's last boot took (docs/boot.md). */
function bootLine(s: DaemonStatus): string[] {
  const b = s.boot;
  if (!b) return [];
  const where = b.booter ? `booter ${b.booter.dhcp.ip}:${b.booter.dhcp.port}` : 'no booter (direct path)';
  const p = b.paths;
  const paths = p ? `; last boot: ${p.booter} by booter, ${p.direct} direct, ${p.notBooted} not booted this run` : '';
  return [`boot:              ${where}${paths}${b.booting ? `; ${b.booting} booting now` : ''}`];
}

/** RFD 82: where the CNs' agent instances stand in SAPI. */
function sapiLine(s: DaemonStatus): string[] {
  const si = s.agents?.['sapi-instances'];
  if (!s.urls?.sapi || !si) return [];
  return [
    `SAPI:              ${s.urls.sapi}: ${si.adopted ?? 0} instances adopted, ${si.present ?? 0} found, ` +
      `${si.pendingCns ?? 0} CNs and ${si.pendingDeletes ?? 0} deletes waiting`,
  ];
}

function memoryLine(m: NonNullable<DaemonStatus['memory']>): string {
  const mib = (n: number): number => Math.round(n / 1048576);
  const heap = m.heapUsedBytes !== undefined && m.heapTotalBytes !== undefined
    ? `, JS heap ${mib(m.heapUsedBytes)} MiB used of ${mib(m.heapTotalBytes)} MiB`
    : '';
  return `RSS ${mib(m.rssBytes)} MiB${heap}`;
}

export const statusCommand: CommandModule<object, StatusArgs> = {
  command: 'status',
  describe: "The daemon's health: CNs, heartbeats per second, tasks in flight, errors by kind",
  builder,
  handler,
};
