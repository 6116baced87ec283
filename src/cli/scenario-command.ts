/**
 * `mockcloud scenario validate|run|stop`: scenario files (docs/scenarios.md) against the
 * running daemon. `validate FILE` checks a file (and its targets against the daemon's fleet
 * when one runs) and changes nothing: exit 0, or exit 2 with every problem at its line.
 * `run FILE` does the same checks, then runs the timeline through the control API with a
 * progress line, writing <data-dir>/scenario.pid while it runs; Ctrl-C (or `scenario stop`,
 * which signals the run through that file) ends every active event (DELETE /events) before it
 * exits. `stop` ends a run and its events; with no run going it still ends the events a
 * finished run left (those written without a duration).
 */
import { randomBytes } from 'node:crypto';
import { readSmallTextFile } from '../common/bounded-file.js';
import { MockcloudError } from '../common/errors.js';
import type { Argv, CommandModule } from 'yargs';
import { isProcessAlive } from '../daemon/daemon-json.js';
import { formatDuration } from '../common/duration.js';
import { checkAgainstFleet } from '../scenarios/fleet-check.js';
import { parseScenario } from '../scenarios/parse.js';
import { claimScenarioPid, removeScenarioPid, removeStaleScenarioPid, runningScenarioPid, scenarioPidPath } from '../scenarios/pid-file.js';
import { RunAborted, runScenario, StepFailed } from '../scenarios/runner.js';
import { scenarioLength, timeline } from '../scenarios/timeline.js';
import type { Scenario, ScenarioProblem } from '../scenarios/types.js';
import { clientDataDir, CliError, daemonFor, daemonLine, findDaemon, UsageError, type DaemonClient } from './daemon-client.js';
import { jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';
import { ControlApiDriver, daemonSeed, endAllEvents, fleetView } from './scenario-driver.js';
import { ScenarioProgress } from './scenario-progress.js';

interface ScenarioArgs extends DataDirArgs, JsonArgs {
  action: 'validate' | 'run' | 'stop';
  file?: string;
  seed?: string;
}

/** How long `stop` waits for the run to undo its events and exit. */
const STOP_WAIT_MS = 30_000;

function builder(y: Argv): Argv<ScenarioArgs> {
  const out = y
    .positional('action', { choices: ['validate', 'run', 'stop'] as const, demandOption: true, describe: 'what to do' })
    .positional('file', { type: 'string', describe: 'the scenario file (YAML; validate, run)' })
    .option('seed', { type: 'string', describe: "the run's seed (run): the same seed draws the same targets again (default: the file's seed:, else the daemon's --seed, else a new one, printed)" })
    .example('$0 scenario validate docs/examples/rolling-reboot.yaml', 'check a file (and its targets against the running daemon)')
    .example('$0 scenario run storm.yaml --seed 42', 'run it; the same seed replays the same draws')
    .example('$0 scenario stop', 'end the running scenario and every event it set')
    .epilog('The format, every step and the stop/undo semantics: docs/scenarios.md. Exit 2: the file has problems (each named with its line); nothing was changed.');
  return withJson(withDataDir(out), 'the result (validate)') as Argv<ScenarioArgs>;
}

/** Read and check the file; the problems, or the scenario. */
async function load(file: string): Promise<{ scenario?: Scenario; problems: ScenarioProblem[] }> {
  let text: string;
  try {
    text = await readSmallTextFile(file, 'a scenario file');
  } catch (err) {
    if (err instanceof MockcloudError) throw new UsageError(err.message);
    throw new UsageError(`cannot read the scenario file ${file}: ${(err as Error).message}`);
  }
  // Loaded here, not at the top: every other command starts without cn-agent's hundred task modules.
  const { TASK_REGISTRY } = await import('../agents/cn-agent/tasks/index.js');
  const parsed = parseScenario(text, file, { taskNames: [...TASK_REGISTRY.keys()] });
  return parsed.ok ? { scenario: parsed.scenario, problems: [] } : { problems: parsed.problems };
}

function printProblems(file: string, problems: ScenarioProblem[]): void {
  for (const p of problems) process.stderr.write(`${file}:${p.line}:${p.col}: ${p.message}\n`);
  process.stderr.write(`mockcloud: ${file}: ${problems.length} problem(s); nothing was changed\n`);
  process.exitCode = 2;
}

/** The daemon of the data dir, or undefined when none runs (validate checks what it can without). */
async function daemonIfRunning(dataDir: string): Promise<DaemonClient | undefined> {
  try {
    return await findDaemon(dataDir);
  } catch (err) {
    if (err instanceof CliError) return undefined;
    throw err;
  }
}

async function validate(argv: ScenarioArgs, file: string): Promise<void> {
  const dataDir = clientDataDir(argv['data-dir']);
  const { scenario, problems } = await load(file);
  let checked = false;
  let fleetSize = 0;
  if (scenario) {
    const daemon = await daemonIfRunning(dataDir);
    if (daemon) {
      if (!argv.json) process.stderr.write(`${daemonLine(daemon.info)}\n`);
      const fleet = await fleetView(daemon);
      problems.push(...checkAgainstFleet(scenario, fleet));
      checked = true;
      fleetSize = fleet.servers.filter((x) => x.headnode !== true).length;
    }
  }
  if (argv.json) {
    const entries = scenario ? timeline(scenario) : [];
    process.stdout.write(
      jsonLine(
        {
          file,
          ok: problems.length === 0,
          problems,
          checkedAgainstDaemon: checked,
          ...(scenario ? { name: scenario.name, steps: scenario.steps.length, entries: entries.length, lengthMs: scenarioLength(entries) } : {}),
        },
      ),
    );
    if (problems.length > 0) process.exitCode = 2;
    return;
  }
  if (problems.length > 0) return printProblems(file, problems);
  const entries = timeline(scenario!);
  process.stdout.write(
    `${file}: ok: scenario ${scenario!.name}, ${scenario!.steps.length} step(s), ${entries.length} on the timeline, lasting at least ${formatDuration(scenarioLength(entries))}` +
      `${checked ? `; its targets match the daemon's fleet (${fleetSize} CNs now)` : ''}\n`,
  );
  if (!checked) process.stderr.write(`mockcloud: no daemon runs for ${dataDir}: targets and profiles were not checked against a fleet\n`);
}

async function run(argv: ScenarioArgs, file: string): Promise<void> {
  const dataDir = clientDataDir(argv['data-dir']);
  const { scenario, problems } = await load(file);
  if (!scenario) return printProblems(file, problems);
  const daemon = await daemonFor(argv);
  const fleetProblems = checkAgainstFleet(scenario, await fleetView(daemon));
  if (fleetProblems.length > 0) return printProblems(file, fleetProblems);
  if (scenario.steps.some((st) => st.action.kind === 'event' || st.action.kind === 'mark')) await requireEventsApi(daemon);
  const seed = argv.seed ?? scenario.seed ?? (await daemonSeed(daemon)) ?? randomBytes(4).toString('hex');
  const other = await claimScenarioPid(dataDir);
  if (other !== undefined) throw new CliError(`a scenario run (pid ${other}) is already driving this daemon; end it with: mockcloud scenario stop --data-dir ${dataDir}`);
  process.stderr.write(`scenario ${scenario.name}: seed ${seed} (run it again with --seed ${seed} to replay the same draws)\n`);

  const controller = new AbortController();
  let signalled: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (signalled) process.exit(sig === 'SIGINT' ? 130 : 143); // a second Ctrl-C: out at once
    signalled = sig;
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const progress = new ScenarioProgress(scenario.name);
  try {
    const outcome = await runScenario(scenario, new ControlApiDriver(daemon, (w) => progress.note(`mockcloud: warning: ${w}`)), {
      seed,
      signal: controller.signal,
      listener: progress,
    });
    progress.end(`scenario ${scenario.name} finished: ${outcome.entries} step(s) in ${formatDuration(outcome.elapsedMs)} (seed ${seed})`);
  } catch (err) {
    if (!(err instanceof RunAborted) && !(err instanceof StepFailed)) {
      progress.end(`scenario ${scenario.name} failed`);
      throw err;
    }
    const undo = await endAllEvents(daemon).then(
      (n) => `ended ${n} active event(s)`,
      (e: unknown) => `could not end the active events: ${(e as Error).message}`,
    );
    if (err instanceof RunAborted) {
      progress.end(`scenario ${scenario.name} interrupted (${signalled ?? 'signal'}); ${undo}`);
      process.exitCode = signalled === 'SIGINT' ? 130 : 143;
    } else {
      progress.end(`scenario ${scenario.name} stopped: ${err.message}; ${undo}`);
      throw new CliError(`${file}: ${err.message}`);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await removeScenarioPid(dataDir);
  }
}

/** Events and marks need the daemon's /events routes: a daemon without them is said before anything runs. */
async function requireEventsApi(daemon: DaemonClient): Promise<void> {
  const res = await daemon.request('GET', '/events');
  if (res.status === 404 || res.status === 405) {
    throw new CliError(`the daemon at ${daemon.url} has no events API (GET /events: HTTP ${res.status}): it cannot run event or mark steps; nothing was changed`);
  }
}

async function stop(argv: ScenarioArgs): Promise<void> {
  const dataDir = clientDataDir(argv['data-dir']);
  const pid = runningScenarioPid(dataDir);
  const lines: string[] = [];
  if (pid !== undefined) {
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + STOP_WAIT_MS;
    while (isProcessAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (isProcessAlive(pid)) throw new CliError(`the scenario run (pid ${pid}) did not exit within ${STOP_WAIT_MS / 1000} s of SIGTERM`);
    lines.push(`stopped the scenario run (pid ${pid})`);
  } else {
    await removeStaleScenarioPid(dataDir);
    lines.push(`no scenario run is going (no live pid in ${scenarioPidPath(dataDir)})`);
  }
  // The run's own undo ended its events; this ends what is left (events without a duration of
  // a finished run, or of a run killed with -9).
  const daemon = await daemonFor(argv);
  const ended = await endAllEvents(daemon);
  lines.push(`ended ${ended} active event(s)`);
  process.stdout.write(`${lines.join('; ')}\n`);
}

async function handler(argv: ScenarioArgs): Promise<void> {
  if (argv.action === 'stop') {
    if (argv.file !== undefined) throw new UsageError('scenario stop takes no file: it ends the run of the data dir\'s daemon');
    return stop(argv);
  }
  if (argv.file === undefined) throw new UsageError(`name the scenario file: mockcloud scenario ${argv.action} FILE`);
  if (argv.seed !== undefined && argv.action !== 'run') throw new UsageError('--seed is for scenario run');
  if (argv.action === 'validate') return validate(argv, argv.file);
  return run(argv, argv.file);
}

export const scenarioCommand: CommandModule<object, ScenarioArgs> = {
  command: 'scenario <action> [file]',
  describe: 'Scenario files (YAML steps on a timeline: create/delete CNs, events, waits, marks): validate FILE, run FILE, stop',
  builder,
  handler,
};
