/**
 * `mockcloud boot-report [--event ID] [--servers U,..] [--since T]`: each CN's last boot in the
 * running daemon (GET /boots, docs/boot.md): why and how it booted, its DHCP packets and
 * retransmits, its time to lease and to `running` (CNAPI's first heartbeat), the platform it
 * came up on; then the storm's summary: p50/p99 time to lease and to running, the CNs not back.
 */
import type { Argv, CommandModule } from 'yargs';
import { isUuid } from '../common/uuid.js';
import { daemonFor, UsageError } from './daemon-client.js';
import { jsonLine, withDataDir } from './options.js';
import { formatTable, sortOf, sortRows, withTableOptions, type TableArgs, type TableSpec } from './table.js';

interface BootReportArgs extends TableArgs {
  'data-dir'?: string;
  event?: string;
  servers?: string;
  since?: string;
}

interface Spread {
  p50: number | null;
  p99: number | null;
  max: number | null;
}

interface BootReport {
  booter: { dhcp: { ip: string; port: number }; http?: string; circuitId?: string } | null;
  summary: {
    boots: number;
    running: number;
    notBack: number;
    notBackServers: string[];
    byPath: Record<string, number>;
    dhcpPackets: number;
    dhcpRetransmits: number;
    leaseMs: Spread;
    runningMs: Spread;
    allRunningMs: number | null;
  };
  servers: Record<string, unknown>[];
}

const TABLE: TableSpec = {
  columns: [
    { field: 'uuid', header: 'UUID' },
    { field: 'hostname', header: 'HOSTNAME' },
    { field: 'cause', header: 'CAUSE' },
    { field: 'path', header: 'PATH' },
    { field: 'phase', header: 'PHASE' },
    { field: 'dhcpPackets', header: 'DHCP', align: 'right' },
    { field: 'dhcpRetransmits', header: 'RETRANS', align: 'right' },
    { field: 'lease', header: 'LEASE', align: 'right' },
    { field: 'running', header: 'RUNNING', align: 'right' },
    { field: 'platform', header: 'PLATFORM' },
    { field: 'ip', header: 'ADMIN IP' },
    { field: 'bootFileFrom', header: 'BOOT FILE' },
    { field: 'eventId', header: 'EVENT' },
    { field: 'startedAt', header: 'STARTED' },
    { field: 'lastError', header: 'LAST ERROR' },
  ],
  defaults: ['hostname', 'cause', 'path', 'phase', 'dhcpPackets', 'dhcpRetransmits', 'lease', 'running', 'platform'],
  long: ['uuid', 'hostname', 'cause', 'path', 'phase', 'dhcpPackets', 'dhcpRetransmits', 'lease', 'running', 'platform', 'ip', 'bootFileFrom', 'eventId', 'lastError'],
  sort: ['startedAt', 'hostname'],
};

function seconds(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '-' : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
}

function builder(y: Argv): Argv<BootReportArgs> {
  const out = y
    .option('event', { type: 'string', describe: 'only the boots this event caused (a power-loss storm: see mockcloud events)' })
    .option('servers', { type: 'string', describe: 'only these CNs (comma-separated UUIDs)' })
    .option('since', { type: 'string', describe: 'only boots begun at or after this ISO time' })
    .example('$0 event power-loss --all --spread 30s && $0 boot-report', 'a boot storm, then how each CN came back')
    .example('$0 boot-report --event EVENT_ID -j', 'that storm as JSON: summary and every CN');
  return withTableOptions(withDataDir(out), TABLE, 'the report ({booter, summary, servers}) on one line') as Argv<BootReportArgs>;
}

async function handler(argv: BootReportArgs): Promise<void> {
  const q = new URLSearchParams();
  if (argv.event !== undefined) q.set('event', argv.event);
  if (argv.servers !== undefined) {
    const bad = argv.servers.split(',').map((s) => s.trim()).find((s) => !isUuid(s));
    if (bad !== undefined) throw new UsageError(`--servers takes comma-separated UUIDs; ${JSON.stringify(bad)} is not one`);
    q.set('servers', argv.servers);
  }
  if (argv.since !== undefined) {
    if (!Number.isFinite(Date.parse(argv.since))) throw new UsageError(`--since ${JSON.stringify(argv.since)} is not an ISO time (e.g. 2024-05-01T12:00:00Z)`);
    q.set('since', new Date(argv.since).toISOString());
  }
  const sort = sortOf(TABLE, argv);
  const daemon = await daemonFor(argv);
  const report = await daemon.call<BootReport>('GET', `/boots${q.size > 0 ? `?${q}` : ''}`);
  if (argv.json) {
    process.stdout.write(jsonLine(report));
    return;
  }
  const rows = report.servers.map((s) => ({ ...s, lease: seconds(s.leaseMs as number | null), running: seconds(s.runningMs as number | null) }));
  sortRows(rows, sort);
  if (rows.length > 0) process.stdout.write(formatTable(TABLE, argv, rows));
  const m = report.summary;
  const b = report.booter;
  const lines = [
    '',
    `booter:    ${b ? `${b.dhcp.ip}:${b.dhcp.port}${b.http ? `, boot files ${b.http}` : ', boot params from CNAPI'}${b.circuitId ? `, rack ${b.circuitId}` : ''}` : 'none (direct path)'}`,
    `boots:     ${m.boots} (${Object.entries(m.byPath).map(([k, v]) => `${k} ${v}`).join(', ')}), ${m.running} running, ${m.notBack} not back`,
    `DHCP:      ${m.dhcpPackets} packets, ${m.dhcpRetransmits} retransmits`,
    `to lease:  p50 ${seconds(m.leaseMs.p50)}, p99 ${seconds(m.leaseMs.p99)}, max ${seconds(m.leaseMs.max)}`,
    `to running: p50 ${seconds(m.runningMs.p50)}, p99 ${seconds(m.runningMs.p99)}, max ${seconds(m.runningMs.max)}`,
    `all running: ${m.allRunningMs === null ? (m.boots === 0 ? '-' : 'not yet') : `${seconds(m.allRunningMs)} after the first boot began`}`,
    ...(m.notBack > 0 ? [`not back:  ${m.notBackServers.join(', ')}${m.notBack > m.notBackServers.length ? ', ...' : ''}`] : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

export const bootReportCommand: CommandModule<object, BootReportArgs> = {
  command: 'boot-report',
  describe: "Each CN's last boot (DHCP to booter, time to lease and to running, platform) and the storm's summary",
  builder,
  handler,
};
