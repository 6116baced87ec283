/**
 * `mockcloud faults list|add|remove|clear`: the cn-agent fault seam of the running daemon
 * (src/agents/cn-agent/faults.ts), for testing how consumers cope with slow or failing tasks.
 */
import type { Argv, CommandModule } from 'yargs';
import { validateFaultSpec } from '../agents/cn-agent/faults.js';
import { isUuid } from '../common/uuid.js';
import { daemonFor, UsageError } from './daemon-client.js';
import { jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';
import { jsonLines } from './table.js';
import { inFlagTerms } from './usage.js';

interface FaultsArgs extends DataDirArgs, JsonArgs {
  action: 'list' | 'add' | 'remove' | 'clear';
  id?: string;
  server?: string;
  task?: string;
  'delay-ms'?: number;
  error?: string;
  probability?: number;
}

interface FaultRule {
  id: string;
  server?: string;
  task?: string;
  delayMs?: number;
  error?: string;
  probability?: number;
  hits?: number;
  /** A task-fault event's rule (mockcloud events): its event and CNs. */
  event?: string;
  servers?: string[];
  hang?: boolean;
}

function builder(y: Argv): Argv<FaultsArgs> {
  const out = y
    .positional('action', { choices: ['list', 'add', 'remove', 'clear'] as const, demandOption: true, describe: 'what to do' })
    .positional('id', { type: 'string', describe: 'the rule to remove (remove)' })
    .option('server', { type: 'string', describe: 'one CN only (add, clear); default every CN' })
    .option('task', { type: 'string', describe: 'one task name only, e.g. machine_create (add); default every task' })
    .option('delay-ms', { type: 'number', describe: 'delay the task this long (add)' })
    .option('error', { type: 'string', describe: 'fail the task with this message (add)' })
    .option('probability', { type: 'number', describe: 'apply to this fraction of matching tasks, 0-1 (add; default 1)' })
    .example('$0 faults add --task machine_create --delay-ms 2000', 'every VM creation takes 2 s longer')
    .example('$0 faults add --server UUID --error "disk on fire"', 'every task of one CN fails')
    .example('$0 faults clear', 'remove every rule');
  return withJson(withDataDir(out), 'the answer') as Argv<FaultsArgs>;
}

function describeRule(r: FaultRule): string {
  const what = [r.delayMs !== undefined ? `delay ${r.delayMs} ms` : '', r.error !== undefined ? `error ${JSON.stringify(r.error)}` : '', r.hang ? 'hang' : '']
    .filter(Boolean)
    .join(' + ');
  const where = r.event !== undefined ? `event ${r.event} (${r.servers?.length ?? 'every'} server(s))` : `server ${r.server ?? '*'}`;
  return `${r.id}  ${where}  task ${r.task ?? '*'}  ${what}${r.probability !== undefined ? `  p=${r.probability}` : ''}  hits ${r.hits ?? 0}`;
}

/** The control API's field of each `faults add` flag, to say a refusal in the flags typed. */
const FAULT_FLAGS: Record<string, string> = {
  'fault:': 'faults add:',
  server: '--server',
  task: '--task',
  delayMs: '--delay-ms',
  error: '--error',
  probability: '--probability',
};

async function handler(argv: FaultsArgs): Promise<void> {
  if (argv.server !== undefined && !isUuid(argv.server)) throw new UsageError(`--server ${JSON.stringify(argv.server)} is not a server UUID`);
  const spec: Record<string, unknown> = {};
  if (argv.action === 'add') {
    for (const [flag, key] of [['server', 'server'], ['task', 'task'], ['delay-ms', 'delayMs'], ['error', 'error'], ['probability', 'probability']] as const) {
      if (argv[flag] !== undefined) spec[key] = argv[flag];
    }
    // The daemon's own checks, here first: a bad value is a usage error that names its flag.
    try {
      validateFaultSpec(spec);
    } catch (err) {
      throw new UsageError(inFlagTerms((err as Error).message, FAULT_FLAGS));
    }
  }
  const daemon = await daemonFor(argv);
  let answer: unknown;
  switch (argv.action) {
    case 'list':
      answer = await daemon.call<FaultRule[]>('GET', '/faults');
      break;
    case 'add': {
      answer = await daemon.call<FaultRule>('POST', '/faults', spec);
      break;
    }
    case 'remove':
      if (!argv.id) throw new UsageError('name the rule to remove: mockcloud faults remove ID (see mockcloud faults list)');
      answer = await daemon.call('DELETE', `/faults/${encodeURIComponent(argv.id)}`);
      break;
    case 'clear':
      answer = await daemon.call('DELETE', `/faults${argv.server ? `?server=${argv.server}` : ''}`);
      break;
  }
  if (argv.json) {
    // A list is one object per line, as every list command's -j.
    process.stdout.write(argv.action === 'list' ? jsonLines(answer as FaultRule[]) : jsonLine(answer));
  } else if (argv.action === 'list') {
    const rules = answer as FaultRule[];
    process.stdout.write(rules.length ? `${rules.map(describeRule).join('\n')}\n` : 'no fault rules\n');
  } else if (argv.action === 'add') {
    process.stdout.write(`${describeRule(answer as FaultRule)}\n`);
  } else {
    process.stdout.write(`removed ${(answer as { removed?: number }).removed ?? 0} rule(s)\n`);
  }
}

export const faultsCommand: CommandModule<object, FaultsArgs> = {
  command: 'faults <action> [id]',
  describe: "Inject cn-agent task faults in the running daemon (delays, errors): list, add, remove ID, clear",
  builder,
  handler,
};
