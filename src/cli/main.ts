#!/usr/bin/env node
/**
 * The `mockcloud` command, with the habits of Triton's CLIs (node-triton, sdcadm): `-h`,
 * `--help`, `help <command>` and `<command> -h` all give help; a usage error exits 2 with one
 * line saying what is wrong and where the help is; any other failure exits 1 with one line;
 * a closed stdout (`mockcloud list-servers | head -1`) ends the command quietly. Each
 * subcommand lives in its own module under src/cli/.
 */
// First: it must run before anything loads restify (see the module).
import './quiet-deprecations.js';
import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { MockcloudError } from '../common/errors.js';
import { describeSystemError, systemErrorCode } from '../common/system-errors.js';
import { MOCKCLOUD_VERSION } from '../daemon/version.js';
import { addExternalsCommand } from './add-externals-command.js';
import { bootReportCommand } from './boot-report-command.js';
import { createServersCommand } from './create-servers-command.js';
import { CliError, UsageError } from './daemon-client.js';
import { daemonCommand } from './daemon-command.js';
import { deleteServersCommand } from './delete-servers-command.js';
import { ensureServersCommand } from './ensure-servers-command.js';
import { eventCommand, eventsCommand } from './event-command.js';
import { faultsCommand } from './faults-command.js';
import { headnodeCommand } from './headnode-command.js';
import { listServersCommand } from './list-servers-command.js';
import { mirrorCommand } from './mirror-command.js';
import { rescanCommand } from './rescan-command.js';
import { setServersCommand } from './set-servers-command.js';
import { scenarioCommand } from './scenario-command.js';
import { statusCommand } from './status-command.js';
import { uiCommand } from './ui-command.js';

const COMMANDS = [
  daemonCommand,
  headnodeCommand,
  createServersCommand,
  ensureServersCommand,
  deleteServersCommand,
  listServersCommand,
  statusCommand,
  uiCommand,
  addExternalsCommand,
  rescanCommand,
  faultsCommand,
  setServersCommand,
  eventCommand,
  eventsCommand,
  bootReportCommand,
  scenarioCommand,
  mirrorCommand,
] as const;

/** The command names, as typed (`create-servers`, `faults`). */
export const COMMAND_NAMES: readonly string[] = [...COMMANDS.map((c) => String(c.command).split(' ')[0]!), 'help', 'completion'];

/** A yargs validation failure (unknown flag, missing count, bad choice): a usage error. */
class YargsUsage extends UsageError {}

interface HelpArgs {
  command?: string;
}

/** `mockcloud help [command]`: the same text as `mockcloud [command] --help`. */
const helpCommand = {
  command: 'help [command]',
  describe: 'Show help for a command (the same as `mockcloud <command> --help`)',
  builder: (y: Argv) => y.positional('command', { type: 'string', describe: 'the command' }) as Argv<HelpArgs>,
  handler: async (argv: HelpArgs) => {
    const name = argv.command;
    if (name !== undefined && !COMMAND_NAMES.includes(name)) {
      throw new UsageError(`there is no command ${JSON.stringify(name)}; the commands are: ${COMMAND_NAMES.join(', ')}`);
    }
    await buildCli(name === undefined || name === 'help' ? ['--help'] : [name, '--help']).parseAsync();
  },
};

export function buildCli(args: string[]): Argv {
  let y = yargs(args)
    .scriptName('mockcloud')
    .usage('$0 <command> [options]\n\nMany mock Triton compute nodes in one process.')
    .parserConfiguration({ 'boolean-negation': true });
  for (const c of COMMANDS) y = y.command(c as never);
  return y
    .command(helpCommand as never)
    .completion('completion', 'Print a bash completion script (add it to ~/.bashrc: mockcloud completion >> ~/.bashrc)')
    .demandCommand(1, 'name a command')
    .recommendCommands()
    .strict()
    .help()
    .alias('help', 'h')
    .version(MOCKCLOUD_VERSION)
    .wrap(Math.min(120, process.stdout.columns || 100))
    .fail((msg, err) => {
      if (err) throw err;
      throw new YargsUsage(msg.replace(/\s*\n\s*/g, '; '));
    });
}

/** The command the user meant (for the hint), from the words before any option. */
function commandOf(args: string[]): string | undefined {
  return args.find((a) => COMMAND_NAMES.includes(a));
}

/** The one line a failure gets: a coded error's message, a system error in words. */
export function describeFailure(err: unknown): string {
  if (err instanceof CliError || err instanceof MockcloudError) return err.message;
  if (systemErrorCode(err)) return describeSystemError(err);
  return err instanceof Error ? err.message : String(err);
}

/**
 * stdout or stderr closed under us (`| head -1`, a closed terminal): stop at once and quietly,
 * as node-triton does; there is nobody left to tell.
 */
function endQuietlyOnClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
}

/**
 * `-s -vms` sorts in reverse, as in node-triton; yargs would read `-vms` as three flags, so a
 * value that starts with a dash is joined to its -s (`-s=-vms`) before yargs sees it.
 */
export function joinDashValues(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const next = args[i + 1];
    if (a === '--') {
      out.push(...args.slice(i));
      break;
    }
    if (a === '-s' && next !== undefined && /^-[^-]/.test(next)) {
      out.push(`-s=${next}`);
      i++;
    } else {
      out.push(a);
    }
  }
  return out;
}

export async function main(argv: string[]): Promise<void> {
  endQuietlyOnClosedOutput();
  const args = joinDashValues(hideBin(argv));
  try {
    await buildCli(args).parseAsync();
  } catch (err) {
    const cmd = commandOf(args);
    process.stderr.write(`mockcloud: ${describeFailure(err)}\n`);
    if (err instanceof UsageError) {
      process.stderr.write(`(see 'mockcloud help${cmd && cmd !== 'help' ? ` ${cmd}` : ''}')\n`);
      process.exitCode = 2;
      return;
    }
    process.exitCode = 1;
  }
}

void main(process.argv);
