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
import { versionLine } from '../daemon/version.js';
import { addExternalsCommand } from './add-externals-command.js';
import { bootReportCommand } from './boot-report-command.js';
import { createServersCommand } from './create-servers-command.js';
import { CliError, UsageError } from './daemon-client.js';
import { installFatalHandlers } from './fatal.js';
import { daemonCommand } from './daemon-command.js';
import { deleteServersCommand } from './delete-servers-command.js';
import { ensureServersCommand } from './ensure-servers-command.js';
import { eventCommand, eventsCommand } from './event-command.js';
import { timingCommand } from './timing-command.js';
import { faultsCommand } from './faults-command.js';
import { headnodeCommand } from './headnode-command.js';
import { listServersCommand } from './list-servers-command.js';
import { mirrorCommand } from './mirror-command.js';
import { rescanCommand } from './rescan-command.js';
import { setServersCommand } from './set-servers-command.js';
import { scenarioCommand } from './scenario-command.js';
import { statusCommand } from './status-command.js';
import { uiCommand } from './ui-command.js';
import { flagName, plainUsage } from './usage.js';

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
  timingCommand,
  bootReportCommand,
  scenarioCommand,
  mirrorCommand,
] as const;

/** The command names, as typed (`create-servers`, `faults`). */
export const COMMAND_NAMES: readonly string[] = [...COMMANDS.map((c) => String(c.command).split(' ')[0]!), 'help', 'version', 'completion'];

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

/** `mockcloud version`: the same line as `mockcloud --version`. */
const versionCommand = {
  command: 'version',
  describe: 'Print the version, the git commit and the build time (as --version does)',
  builder: (y: Argv) => y,
  handler: () => {
    process.stdout.write(`${versionLine()}\n`);
  },
};

export function buildCli(args: string[]): Argv {
  let y = yargs(args)
    .scriptName('mockcloud')
    // The messages usage.ts rewords are yargs' English ones, whatever the user's LANG.
    .locale('en')
    .usage('$0 <command> [options]\n\nMany mock Triton compute nodes in one process.')
    .parserConfiguration({ 'boolean-negation': true });
  for (const c of COMMANDS) y = y.command(c as never);
  const cli: Argv = y
    .command(helpCommand as never)
    .command(versionCommand as never)
    .completion('completion', 'Print a bash completion script (add it to ~/.bashrc: mockcloud completion >> ~/.bashrc)')
    .middleware(numbersAreNumbers(args) as never, true)
    .demandCommand(1, 'name a command')
    .recommendCommands()
    .strict()
    .help()
    .alias('help', 'h')
    .version(versionLine())
    .wrap(Math.min(120, process.stdout.columns || 100))
    .fail((msg, err) => {
      // yargs' own parse errors (a flag missing its value) are usage errors too.
      if (err && err.name !== 'YError') throw err;
      // The command's options at the time of the failure, for a did-you-mean.
      const options = Object.keys((cli as Argv & { getOptions(): { key: Record<string, unknown> } }).getOptions().key).filter((k) => !/[A-Z]/.test(k));
      throw new YargsUsage(plainUsage(msg ?? err?.message ?? '', commandOf(args), args, options).replace(/\s*\n\s*/g, '; '));
    });
  return cli;
}

/**
 * A number option or argument given a word (`create-servers abc`, `--count x`): yargs makes it
 * NaN, and the check after it would say "not null"; say what was typed instead.
 */
function numbersAreNumbers(args: string[]): (argv: Record<string, unknown>) => void {
  return (argv) => {
    for (const [key, value] of Object.entries(argv)) {
      if (typeof value !== 'number' || !Number.isNaN(value) || /[A-Z]/.test(key)) continue;
      const flag = flagName(key);
      const i = args.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
      let raw: string | undefined;
      if (i >= 0) raw = args[i]!.startsWith(`${flag}=`) ? args[i]!.slice(flag.length + 1) : args[i + 1];
      else raw = args.slice(args.findIndex((a) => COMMAND_NAMES.includes(a)) + 1).find((a) => !a.startsWith('-'));
      throw new UsageError(`${i >= 0 ? flag : key === 'count' ? 'N' : key} must be a number, not ${JSON.stringify(raw ?? '')}`);
    }
  };
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
  installFatalHandlers(describeFailure);
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
