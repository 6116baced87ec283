/**
 * `mockcloud daemon`: run the daemon in the foreground until SIGTERM or SIGINT (then stop
 * cleanly and exit 0). Checks that it can start before it writes anything (preflight.ts),
 * prints a short summary on stdout (where everything listens, how to read the logs) and records
 * that it runs for the other commands (daemon-registry.ts), and says in one line what it stopped. The bunyan log goes to --log-file;
 * without one, to <data-dir>/logs/mockcloud.log with the embedded dev headnode (a person at a
 * terminal), to stderr otherwise (SMF's service log in a mockcloud zone).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { createLogger } from '../common/log.js';
import { resolveConfig } from '../daemon/config.js';
import { SETTINGS, type RawSettings } from '../daemon/settings.js';
import { noMdata, systemMdataReader } from '../daemon/mdata.js';
import { MAX_CREATE_COUNT } from '../daemon/create-request.js';
import { parseMix, type Mix } from '../daemon/fleet-mix.js';
import { UsageError } from './daemon-client.js';
import { registerDaemon, unregisterDaemon } from './daemon-registry.js';
import { setFatalLog } from './fatal.js';

const require = createRequire(import.meta.url);

interface DaemonArgs extends RawSettings {
  config?: string;
  headnode?: boolean;
  servers?: number;
  mix?: string;
}

function builder(y: Argv): Argv<DaemonArgs> {
  let out = y.option('config', {
    type: 'string',
    describe: 'config file (JSON; env MOCKCLOUD_CONFIG) [default: <data-dir>/config.json when present]',
  }) as Argv<DaemonArgs>;
  for (const s of SETTINGS) {
    const type = 'boolean' in s ? 'boolean' : 'string';
    out = out.option(s.flag, { type, describe: `${s.help} (env ${s.env})` }) as Argv<DaemonArgs>;
  }
  out = out
    .option('headnode', {
      type: 'boolean',
      default: true,
      describe:
        'run the embedded dev headnode (CNAPI, VMAPI, NAPI, IMGAPI on loopback ports, state in <data-dir>/headnode/) ' +
        'when no Triton address is configured; --no-headnode runs the mock CNs standalone instead',
    })
    .option('servers', {
      type: 'number',
      describe: `make sure at least N mock CNs exist at start (creates the missing ones, 0-${MAX_CREATE_COUNT}; never deletes)`,
    })
    .option('mix', {
      type: 'string',
      describe: 'with --servers: the missing CNs as a weighted mix of hardware profiles, e.g. small:70,large:25,storage:5 (exact counts; order drawn from --seed)',
    }) as Argv<DaemonArgs>;
  return out.epilog(
    'Each setting comes from, in this order: its flag, its environment variable, the config file ' +
      '(same names in camelCase, e.g. "cnapiUrl"), SmartOS mdata (sdc:datacenter_name + dnsDomain give ' +
      'http://cnapi.<dc>.<domain> and the other API URLs; ufdsAdmin, sdc:nics, mockcloudRoot, mockcloudMetricsAddress), then the default. ' +
      'Without any Triton address the daemon runs the embedded dev headnode and points the mock CNs at it ' +
      '(its addresses are printed and written to <data-dir>/headnode.json); with --no-headnode and no CNAPI URL ' +
      'the mock CNs run standalone (registered at once, reporting to no one). ' +
      'With the dev headnode the terminal shows a summary and the bunyan log goes to <data-dir>/logs/mockcloud.log ' +
      '(--log-file to change); cmon-agent takes a free port when 9163 is taken. ' +
      'The data dir defaults to /data/mockcloud when it exists, else ~/.mockcloud. ' +
      'Other commands find this daemon through <data-dir>/daemon.json; without --data-dir, the one daemon running ' +
      '(each registers in $XDG_STATE_HOME/mockcloud/daemons/, default ~/.local/state/..., while it runs); ' +
      'with several running they ask which one (--data-dir or MOCKCLOUD_DATA_DIR).',
  );
}

async function handler(argv: DaemonArgs & Record<string, unknown>): Promise<void> {
  const flags: RawSettings & { config?: string } = {};
  for (const s of SETTINGS) {
    const v = argv[s.key] ?? argv[s.flag];
    if (typeof v === 'string' || typeof v === 'number') flags[s.key] = v;
    else if (typeof v === 'boolean') flags[s.key] = String(v);
  }
  if (typeof argv.config === 'string') flags.config = argv.config;
  const servers = argv.servers;
  if (servers !== undefined && (!Number.isInteger(servers) || servers < 0 || servers > MAX_CREATE_COUNT)) {
    throw new UsageError(`--servers must be an integer from 0 to ${MAX_CREATE_COUNT}, not ${JSON.stringify(servers)}`);
  }
  let mix: Mix | undefined;
  if (argv.mix !== undefined) {
    if (servers === undefined) throw new UsageError('--mix goes with --servers N (the mix of the CNs it creates)');
    try {
      mix = parseMix(argv.mix);
    } catch (err) {
      throw new UsageError(`--mix: ${(err as Error).message}`);
    }
  }
  const config = await resolveConfig({
    flags,
    env: process.env,
    mdata: process.env.MOCKCLOUD_NO_MDATA === '1' ? noMdata : systemMdataReader(),
  });
  // Loaded here, not at the top: other commands need none of the daemon's modules.
  const { Daemon } = await import('../daemon/daemon.js');
  const { preflight, devLogFile } = await import('../daemon/preflight.js');
  const { capHeapGrowth, disablePretenuring, HeapReclaimer } = await import('../daemon/heap-policy.js');
  const { DEFAULT_MAIN_THREAD_NICE, lowerPriorityBesides } = await import('../daemon/thread-priority.js');
  const embedded = argv.headnode !== false;
  const urls0 = config.urls;
  const devMode = embedded && !urls0.cnapi && !urls0.vmapi && !urls0.napi && !urls0.imgapi;
  // Nothing is written (not even the data dir or the log file) until the daemon knows it can start.
  const checked = await preflight(config, { devMode });
  const startConfig = checked.config;
  // With the dev headnode the terminal gets a summary, the full bunyan stream a file; where a
  // real Triton (an SMF log) is concerned, stderr stays the default.
  if (devMode && startConfig.logFile === undefined) {
    startConfig.logFile = devLogFile(startConfig.dataDir);
    startConfig.sources = { ...startConfig.sources, logFile: 'default' };
  }
  if (startConfig.logFile) await mkdir(path.dirname(startConfig.logFile), { recursive: true });
  const log = createLogger({
    name: 'mockcloud',
    ...(startConfig.logFile ? { path: startConfig.logFile } : {}),
    ...(startConfig.logLevel ? { level: startConfig.logLevel as 'info' } : {}),
  });
  // An error nobody caught: its stack to this log, one line to the terminal (fatal.ts).
  setFatalLog(startConfig.logFile);
  for (const notice of checked.notices) log.warn(notice);
  disablePretenuring();
  capHeapGrowth();
  const daemon = new Daemon({ config: startConfig, log, ...(embedded ? { embeddedHeadnode: {} } : {}) });
  const reclaimer = new HeapReclaimer({
    log: daemon.log.child({ component: 'heap' }),
    beforePause: async (expectedMs) => ({ heartbeatsSentAhead: await daemon.sendHeartbeatsAhead(expectedMs) }),
    tasks: () => daemon.taskActivity(),
  });

  let stopping: Promise<void> | undefined;
  let registered: string | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    daemon.log.info({ signal }, 'stopping on signal');
    reclaimer.stop();
    // What it hosted, counted before the stop lets go of it.
    const hosted = stoppedLine(daemon);
    stopping = daemon.stop().then(
      () => {
        unregisterDaemon(registered);
        process.stdout.write(`${hosted}\n`);
        process.exitCode = 0;
      },
      (err: unknown) => {
        unregisterDaemon(registered);
        console.error(`mockcloud daemon: stop failed: ${(err as Error).message}`);
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Whatever ends the process, its registry entry goes with it.
  process.on('exit', () => unregisterDaemon(registered));

  await daemon.start();
  // Once the heartbeat thread runs and has said which it is: every other thread goes down.
  if (!stopping && daemon.reporter.heartbeatThreadRunning) {
    const tid = await boundedWait(daemon.reporter.heartbeatThreadId(), HEARTBEAT_THREAD_START_MS);
    lowerPriorityBesides(tid, startConfig.mainThreadNice ?? DEFAULT_MAIN_THREAD_NICE, daemon.log);
  }
  if (!stopping) reclaimer.start();
  if (!stopping) {
    registered = await registerDaemon({
      dataDir: startConfig.dataDir,
      pid: process.pid,
      startedAt: (daemon.startedAt ?? new Date()).toISOString(),
      control: daemon.controlAddress.url,
    });
    // A signal while it was being written: the stop has already run its removal.
    if (stopping) unregisterDaemon(registered);
  }
  process.stdout.write(summary(daemon, [...checked.notices, ...daemon.notices]));
  if (servers !== undefined && !stopping) {
    if (servers > daemon.fleet.computeNodeCount) {
      process.stdout.write(`creating ${servers - daemon.fleet.computeNodeCount} mock CN(s) to reach ${servers}...\n`);
      let result;
      try {
        result = await daemon.growTo(servers, undefined, mix);
      } catch (err) {
        // A mix naming a profile the daemon does not have: nothing was created; say so and stop.
        process.stderr.write(`mockcloud daemon: --servers: ${(err as Error).message}\n`);
        reclaimer.stop();
        await daemon.stop();
        process.exitCode = 1;
        return;
      }
      if (result.errors.length > 0) {
        // The daemon keeps running (what exists works); the failure is plain on stdout and in the log.
        process.stdout.write(`mockcloud daemon: ${result.errors.length} server creation(s) failed: ${result.errors[0]!.message}\n`);
      }
    }
    // Also when the data dir had them all already (a restart): the run's outcome, in one line.
    process.stdout.write(`mock CNs: ${daemon.fleet.computeNodeCount} (wanted ${servers})\n`);
  }
  // The control API's listening socket keeps the process alive until a signal stops it.
}

/** How long the heartbeat thread may take to start before its priority is left alone. */
const HEARTBEAT_THREAD_START_MS = 10_000;

/** The promise's value, or undefined once `ms` have passed. */
function boundedWait<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The few lines a person at the terminal needs: where everything is and how to see more. */
function summary(daemon: import('../daemon/daemon.js').Daemon, notices: string[]): string {
  const config = daemon.config;
  const c = daemon.controlAddress;
  const urls = config.urls;
  const where = daemon.headnode ? ' (embedded dev headnode)' : '';
  const lines = [
    `mockcloud daemon running (pid ${process.pid})`,
    `  data dir:     ${shown(config.dataDir)}`,
    `  control API:  ${c.url}`,
    `  fleet page:   ${daemon.uiAddress?.url ?? 'none (--ui-address none)'}`,
    config.agentIps === 'loopback'
      ? `  mock CNs:     ${mockCnsLine(daemon.fleet)}, cn-agent sockets each on its own 127.x.y.z address (--agent-ips loopback)`
      : `  mock CNs:     ${mockCnsLine(daemon.fleet)}, cn-agent sockets on ${config.bindIp}${config.portRange ? ` ports ${config.portRange.join('-')}` : ''}`,
    `  cmon-agent:   ${cmonLine(daemon.cmonAddresses)}`,
    `  metrics:      ${c.url}/metrics${daemon.metricsAddress ? ` and ${daemon.metricsAddress.url} (--metrics-address)` : ''}`,
    `  CNAPI:        ${urls.cnapi ? urls.cnapi + where : 'none (standalone)'}`,
    `  VMAPI:        ${urls.vmapi ? urls.vmapi + where : 'none'}`,
    `  NAPI:         ${urls.napi ? urls.napi + where : 'none'}`,
    `  IMGAPI:       ${urls.imgapi ? urls.imgapi + where : 'none'}`,
    `  SAPI:         ${urls.sapi ? urls.sapi + where : 'none'}`,
    ...(urls.papi ? [`  PAPI:         ${urls.papi}${where}`] : []),
    `  FWAPI:        ${urls.fwapi ? `${urls.fwapi}${urls.fwapiFast ? `, updates ${urls.fwapiFast}` : ''}${where}` : 'none'}`,
  ];
  if (config.logFile) {
    lines.push(`  logs:         ${shown(config.logFile)}`);
    lines.push(`  follow them:  tail -f ${shown(config.logFile)} | ${bunyanCommand()} -o short`);
  } else {
    lines.push('  logs:         stderr (bunyan JSON)');
  }
  for (const notice of notices) lines.push(`  note: ${notice}`);
  // As the user started this one: `npx mockcloud` in a checkout, `mockcloud` where it is on PATH.
  const cli = process.env.npm_command === 'exec' ? 'npx mockcloud' : 'mockcloud';
  lines.push(`In another shell, '${cli} status' and '${cli} list-servers' find this daemon. Ctrl-C stops it.`);
  return `${lines.join('\n')}\n`;
}

/** The one line Ctrl-C (or SIGTERM) leaves: what stopped, and where its state is. */
function stoppedLine(daemon: import('../daemon/daemon.js').Daemon): string {
  const cns = daemon.fleet.computeNodeCount;
  const parts = [`${cns} mock CN${cns === 1 ? '' : 's'}`];
  if (daemon.headnode) parts.push('the embedded dev headnode');
  return `mockcloud daemon stopped (pid ${process.pid}): ${parts.join(' and ')}; their state is in ${shown(daemon.config.dataDir)}, the next start loads it`;
}

/** A path as the user can paste it: relative to the working directory when under it. */
function shown(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? `./${rel}` : p;
}

/** The `bunyan` CLI that comes with mockcloud (node_modules/.bin/bunyan), as the user can run it. */
function bunyanCommand(): string {
  try {
    const pkg = require.resolve('bunyan/package.json');
    const bin = path.join(path.dirname(pkg), 'bin', 'bunyan');
    const dotBin = path.join(path.dirname(path.dirname(pkg)), '.bin', 'bunyan');
    return shown(existsSync(dotBin) ? dotBin : bin);
  } catch {
    return 'bunyan';
  }
}

/** "5" or "5 + the headnode server". */
function mockCnsLine(fleet: { computeNodeCount: number; headnode(): unknown }): string {
  return `${fleet.computeNodeCount}${fleet.headnode() ? ' + the headnode server' : ''}`;
}

function cmonLine(addresses: { ip: string; port: number }[] | undefined): string {
  if (!addresses) return 'not running';
  if (addresses.length === 0) return 'no address yet';
  const port = addresses[0]!.port;
  return addresses.length === 1 ? `${addresses[0]!.ip}:${port}` : `port ${port} on ${addresses.length} addresses`;
}

export const daemonCommand: CommandModule<object, DaemonArgs> = {
  command: 'daemon',
  describe: 'Run the daemon hosting every mock CN of a data dir (foreground; SIGTERM/SIGINT stop it)',
  builder,
  handler,
};
