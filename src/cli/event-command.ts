/**
 * `mockcloud event <type> [target] [--duration D] [params]`, `mockcloud event end ID|--all`
 * and `mockcloud events`: fault events in the running daemon (POST/GET/DELETE /events,
 * docs/events.md). Durations are written 500ms, 30s, 5m or 1h (a bare number is seconds).
 */
import type { Argv, CommandModule } from 'yargs';
import { isUuid } from '../common/uuid.js';
import { EVENT_TYPES, type EventView } from '../events/index.js';
import { MAX_DURATION_MS, validateEvent } from '../events/validate.js';
import { CliError, daemonFor, UsageError } from './daemon-client.js';
import { jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';
import { formatTable, sortOf, sortRows, withTableOptions, type TableArgs, type TableSpec } from './table.js';
import { inFlagTerms } from './usage.js';

interface EventArgs extends DataDirArgs, JsonArgs {
  type: string;
  id?: string;
  servers?: string;
  percent?: number;
  count?: number;
  profile?: string;
  all?: boolean;
  duration?: string;
  seed?: string;
  period?: string;
  down?: string;
  late?: string;
  boot?: string;
  off?: string;
  spread?: string;
  vms?: string;
  'vm-percent'?: number;
  'exit-status'?: number;
  fill?: number;
  over?: string;
  'available-mib'?: number;
  'percent-used'?: number;
  task?: string;
  delay?: string;
  error?: string;
  probability?: number;
  hang?: boolean;
  api?: string;
  'error-rate'?: number;
  factor?: number;
  timing?: string;
  keys?: string;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "500ms", "30s", "5m", "1h" or a bare number of seconds, in ms (at most 30 days). */
export function parseDuration(flag: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a duration (e.g. 500ms, 30s, 5m, 1h)`);
  const ms = Math.round(Number(m[1]) * UNITS[m[2] ?? 's']!);
  if (ms > MAX_DURATION_MS) throw new UsageError(`--${flag} ${text} is longer than 30 days`);
  return ms;
}

/**
 * The control API's field of each flag, to say a refusal in the flags the user typed. A
 * duration flag's field is in ms; its bounds are said in ms too (the flag takes 500ms).
 */
function eventFlags(type: string, bare = true): Record<string, string> {
  const dotted: Record<string, string> = {
    'target.servers': '--servers',
    'target.percent': '--percent',
    'target.count': '--count',
    'target.profile': '--profile',
    'target.all': '--all',
    durationMs: '--duration',
    seed: '--seed',
    'params.bootMs': '--boot',
    'params.offMs': '--off',
    'params.spreadMs': '--spread',
    'params.periodMs': '--period',
    'params.downMs': '--down',
    'params.lateMs': '--late',
    'params.vms': '--vms',
    'params.percent': type === 'zpool-fill' ? '--fill' : '--vm-percent',
    'params.exitStatus': '--exit-status',
    'params.overMs': '--over',
    'params.availableMiB': '--available-mib',
    'params.percentUsed': '--percent-used',
    'params.task': '--task',
    'params.delayMs': '--delay',
    'params.error': '--error',
    'params.probability': '--probability',
    'params.hang': '--hang',
    'params.api': '--api',
    'params.errorRate': '--error-rate',
  };
  if (!bare) return dotted;
  return {
    ...dotted,
    // In a "give delayMs, error or hang" the fields have no prefix.
    delayMs: '--delay',
    error: '--error',
    errorRate: '--error-rate',
    hang: '--hang',
    availableMiB: '--available-mib',
    percentUsed: '--percent-used',
  };
}

function list(flag: string, text: string): string[] {
  const items = text.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = items.find((s) => !isUuid(s));
  if (items.length === 0 || bad !== undefined) throw new UsageError(`--${flag} takes comma-separated UUIDs${bad ? `; ${JSON.stringify(bad)} is not one` : ''}`);
  return items;
}

function target(argv: EventArgs): Record<string, unknown> {
  const given: Record<string, unknown>[] = [];
  if (argv.servers !== undefined) given.push({ servers: list('servers', argv.servers) });
  if (argv.percent !== undefined) given.push({ percent: argv.percent });
  if (argv.count !== undefined) given.push({ count: argv.count });
  if (argv.profile !== undefined) given.push({ profile: argv.profile });
  if (argv.all) given.push({ all: true });
  if (given.length !== 1) throw new UsageError('name the servers with exactly one of --servers, --percent, --count, --profile, --all');
  return given[0]!;
}

/** The params of each type from its flags; the daemon checks their values. */
function params(argv: EventArgs): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  const dur = (flag: keyof EventArgs & string, key: string): void => {
    const v = argv[flag];
    if (typeof v === 'string') p[key] = parseDuration(flag, v);
  };
  const val = (flag: keyof EventArgs & string, key: string): void => {
    if (argv[flag] !== undefined) p[key] = argv[flag];
  };
  switch (argv.type) {
    case 'reboot':
      dur('boot', 'bootMs');
      break;
    case 'power-loss':
      dur('off', 'offMs');
      dur('spread', 'spreadMs');
      dur('boot', 'bootMs');
      break;
    case 'flap':
      if (argv.period === undefined) throw new UsageError('flap needs --period (e.g. --period 20s [--down 10s])');
      dur('period', 'periodMs');
      dur('down', 'downMs');
      break;
    case 'slow-heartbeat':
      if (argv.late === undefined) throw new UsageError('slow-heartbeat needs --late (e.g. --late 8s)');
      dur('late', 'lateMs');
      break;
    case 'vm-crash':
    case 'vm-reboot':
      if (argv.vms !== undefined) p.vms = list('vms', argv.vms);
      val('vm-percent', 'percent');
      if (argv.type === 'vm-crash') val('exit-status', 'exitStatus');
      break;
    case 'zpool-fill':
      if (argv.fill === undefined) throw new UsageError('zpool-fill needs --fill PERCENT (e.g. --fill 95 --over 10m)');
      val('fill', 'percent');
      dur('over', 'overMs');
      break;
    case 'memory-pressure':
      val('available-mib', 'availableMiB');
      val('percent-used', 'percentUsed');
      break;
    case 'task-fault':
      val('task', 'task');
      dur('delay', 'delayMs');
      val('error', 'error');
      val('probability', 'probability');
      if (argv.hang) p.hang = true;
      break;
    case 'timing':
      val('factor', 'factor');
      val('timing', 'profile');
      if (argv.vms !== undefined) p.vms = list('vms', argv.vms);
      if (argv.keys !== undefined) p.keys = argv.keys.split(',').map((k) => k.trim()).filter(Boolean);
      if (p.factor === undefined && p.profile === undefined) throw new UsageError('timing needs --factor and/or --timing (e.g. --factor 5 --keys tasks)');
      break;
    case 'outbound-fault':
      p.api = argv.api ?? '*';
      dur('delay', 'delayMs');
      val('error-rate', 'errorRate');
      val('probability', 'probability');
      break;
  }
  return p;
}

function describeEvent(e: EventView): string {
  const n = e.servers.length;
  const until = e.endsAt ? `until ${e.endsAt}` : 'until ended';
  const vms = e.vms ? `, ${e.vms.length} VM(s)` : '';
  const skipped = e.skipped ? `, ${e.skipped.length} skipped` : '';
  return `${e.id}  ${e.type}  ${n} server(s)${vms}${skipped}  since ${e.startedAt}  ${until}`;
}

function builder(y: Argv): Argv<EventArgs> {
  const out = y
    .positional('type', { choices: [...EVENT_TYPES, 'end'], demandOption: true, describe: 'the event, or end to end one' })
    .positional('id', { type: 'string', describe: 'the event to end (end)' })
    .option('servers', { type: 'string', describe: 'these CNs (comma-separated UUIDs)' })
    .option('percent', { type: 'number', describe: 'this percentage of the CNs, drawn at random (seeded)' })
    .option('count', { type: 'number', describe: 'this many CNs, drawn at random (seeded)' })
    .option('profile', { type: 'string', describe: "the CNs of this hardware profile" })
    .option('all', { type: 'boolean', describe: 'every CN (with end: every active event)' })
    .option('duration', { type: 'string', describe: 'end (undo) the event after this long; default: until `event end`' })
    .option('seed', { type: 'string', describe: "seed of the target and fault draws (default: the daemon's --seed)" })
    .option('period', { type: 'string', describe: 'flap: one down-and-up cycle' })
    .option('down', { type: 'string', describe: 'flap: time down in each period (default half)' })
    .option('late', { type: 'string', describe: 'slow-heartbeat: how late each heartbeat goes' })
    .option('boot', { type: 'string', describe: "reboot: time down; power-loss: each CN's kernel boot time (default the daemon's --boot-seconds)" })
    .option('off', { type: 'string', describe: 'power-loss: how long the power stays off (default 0: back at once)' })
    .option('spread', { type: 'string', describe: 'power-loss: power comes back to each CN at a random moment within this (default 0: all at once)' })
    .option('vms', { type: 'string', describe: 'vm-crash, vm-reboot, timing: these VMs (comma-separated UUIDs; default every running VM, timing: all)' })
    .option('vm-percent', { type: 'number', describe: "vm-crash, vm-reboot: this percentage of the targets' running VMs" })
    .option('exit-status', { type: 'number', describe: 'vm-crash: the exit status vmadm records (default 1)' })
    .option('fill', { type: 'number', describe: 'zpool-fill: the pool fill to reach, in percent' })
    .option('over', { type: 'string', describe: 'zpool-fill: the ramp time (default at once)' })
    .option('available-mib', { type: 'number', describe: 'memory-pressure: available memory left, MiB' })
    .option('percent-used', { type: 'number', describe: 'memory-pressure: memory in use, percent' })
    .option('task', { type: 'string', describe: "task-fault: one task name, e.g. machine_create (default '*': every task)" })
    .option('delay', { type: 'string', describe: 'task-fault, outbound-fault: added delay' })
    .option('error', { type: 'string', describe: 'task-fault: fail the task with this message' })
    .option('probability', { type: 'number', describe: 'task-fault, outbound-fault: fraction of matching tasks/requests hit, 0-1' })
    .option('hang', { type: 'boolean', describe: "task-fault: the task never answers until the event ends or its caller gives up" })
    .option('api', { choices: ['cnapi', 'vmapi', 'napi', '*'], describe: "outbound-fault: which API's calls (default '*')" })
    .option('error-rate', { type: 'number', describe: 'outbound-fault: fraction of the hit requests that fail, 0-1' })
    .option('factor', { type: 'number', describe: 'timing: multiply the durations by this (5: five times slower)' })
    .option('timing', { type: 'string', describe: 'timing: a built-in timing profile instead (instant, smartos)' })
    .option('keys', { type: 'string', describe: 'timing: only these timing keys (comma-separated: tasks, vm.boot, ...; docs/timing.md)' })
    .example('$0 event offline --count 3 --duration 30s', 'three random CNs stop heartbeating, then come back')
    .example('$0 event vm-crash --servers UUID --exit-status 137', "that CN's running VMs crash")
    .example('$0 event power-loss --all --spread 30s', 'a boot storm: every CN loses power and boots (by booter) over 30 s; see mockcloud boot-report')
    .example('$0 event zpool-fill --percent 10 --fill 95 --over 5m', "10 % of the CNs' pools fill to 95 %")
    .example('$0 event task-fault --all --task machine_create --hang', 'VM creations hang until the event ends')
    .example('$0 event timing --profile rack-a --factor 5 --keys tasks --duration 10m', "rack-a's tasks run 5x slower for 10 minutes")
    .example('$0 event end --all', 'end every active event');
  return withJson(withDataDir(out), 'the answer') as Argv<EventArgs>;
}

async function handler(argv: EventArgs): Promise<void> {
  if (argv.type === 'end') {
    if ((argv.id === undefined) === !argv.all) throw new UsageError('name the event to end (mockcloud event end ID, see mockcloud events) or give --all');
    const daemon = await daemonFor(argv);
    const answer = argv.all
      ? await daemon.call<{ ended: number }>('DELETE', '/events')
      : await daemon.call<{ id: string }>('DELETE', `/events/${encodeURIComponent(argv.id!)}`);
    if (argv.json) process.stdout.write(jsonLine(answer));
    else process.stdout.write(argv.all ? `ended ${(answer as { ended: number }).ended} event(s)\n` : `ended ${argv.id}\n`);
    return;
  }
  if (argv.id !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(argv.id)}`);
  const body: Record<string, unknown> = { type: argv.type, target: target(argv), params: params(argv) };
  if (argv.duration !== undefined) body.durationMs = parseDuration('duration', argv.duration);
  if (argv.seed !== undefined) body.seed = argv.seed;
  // The daemon's own checks, here first: a bad value is a usage error that names its flag.
  try {
    validateEvent(body);
  } catch (err) {
    throw new UsageError(inFlagTerms((err as Error).message, eventFlags(argv.type)));
  }
  const daemon = await daemonFor(argv);
  const answer = await daemon.call<EventView>('POST', '/events', body).catch((err: unknown) => {
    // The daemon's refusal (no CN matches, the headnode server named) in the flags' words too.
    throw err instanceof CliError ? new CliError(inFlagTerms(err.message, eventFlags(argv.type, false))) : err;
  });
  process.stdout.write(argv.json ? jsonLine(answer) : `${describeEvent(answer)}\n`);
}

export const eventCommand: CommandModule<object, EventArgs> = {
  command: 'event <type> [id]',
  describe: `Start a fault event on CNs or their VMs (${EVENT_TYPES.join(', ')}), or end one: event end ID|--all`,
  builder,
  handler,
};

type ListArgs = DataDirArgs & TableArgs;

/** `mockcloud events`: a table as list-servers' (-H, -o, -s, -l), or one JSON object per line (-j). */
const EVENTS_TABLE: TableSpec = {
  columns: [
    { field: 'id', header: 'ID' },
    { field: 'type', header: 'TYPE' },
    { field: 'servers', header: 'SERVERS', align: 'right' },
    { field: 'vms', header: 'VMS', align: 'right' },
    { field: 'skipped', header: 'SKIPPED', align: 'right' },
    { field: 'startedAt', header: 'STARTED' },
    { field: 'endsAt', header: 'ENDS' },
    { field: 'source', header: 'SOURCE' },
  ],
  defaults: ['id', 'type', 'servers', 'vms', 'startedAt', 'endsAt'],
  long: ['id', 'type', 'servers', 'vms', 'skipped', 'startedAt', 'endsAt', 'source'],
  sort: ['startedAt', 'id'],
};

/** An event as a row: counts for the lists, "until ended" for an event without a duration. */
function eventRow(e: EventView): Record<string, unknown> {
  const src = e.source;
  return {
    id: e.id,
    type: e.type,
    servers: e.servers.length,
    vms: e.vms ? e.vms.length : '-',
    skipped: e.skipped ? e.skipped.length : 0,
    startedAt: e.startedAt,
    endsAt: e.endsAt ?? 'until ended',
    source: src?.scenario !== undefined ? `${src.scenario}${src.step !== undefined ? ` step ${src.step}` : ''}` : '-',
  };
}

export const eventsCommand: CommandModule<object, ListArgs> = {
  command: 'events',
  describe: 'List the active fault events of the running daemon (-H, -o, -s, -l, -j)',
  builder: (y: Argv) => withTableOptions(withDataDir(y), EVENTS_TABLE, 'one event per line') as Argv<ListArgs>,
  handler: async (argv: ListArgs) => {
    // A bad -o or -s is a usage error whatever the daemon has.
    const sort = sortOf(EVENTS_TABLE, argv);
    if (!argv.json) formatTable(EVENTS_TABLE, argv, []);
    const daemon = await daemonFor(argv);
    const answer = await daemon.call<{ active: EventView[] }>('GET', '/events');
    if (argv.json) {
      process.stdout.write(answer.active.map((e) => `${JSON.stringify(e)}\n`).join(''));
      return;
    }
    process.stdout.write(formatTable(EVENTS_TABLE, argv, sortRows(answer.active.map(eventRow), sort)));
  },
};
