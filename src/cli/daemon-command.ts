/**
 * `mockcloud daemon`: run the daemon in the foreground until SIGTERM or SIGINT (then stop
 * cleanly and exit 0). Prints where it listens on stdout; bunyan logs go to stderr or --log-file.
 */
import type { Argv, CommandModule } from 'yargs';
import { resolveConfig, SETTINGS, type RawSettings } from '../daemon/config.js';
import { noMdata, systemMdataReader } from '../daemon/mdata.js';

interface DaemonArgs extends RawSettings {
  config?: string;
}

function builder(y: Argv): Argv<DaemonArgs> {
  let out = y.option('config', {
    type: 'string',
    describe: 'config file (JSON; env MOCKCLOUD_CONFIG) [default: <data-dir>/config.json when present]',
  }) as Argv<DaemonArgs>;
  for (const s of SETTINGS) {
    out = out.option(s.flag, { type: 'string', describe: `${s.help} (env ${s.env})` }) as Argv<DaemonArgs>;
  }
  return out.epilog(
    'Each setting comes from, in this order: its flag, its environment variable, the config file ' +
      '(same names in camelCase, e.g. "cnapiUrl"), SmartOS mdata (sdc:datacenter_name + dnsDomain give ' +
      'http://cnapi.<dc>.<domain> and the other API URLs; ufdsAdmin, sdc:nics, mockcloudRoot), then the default. ' +
      'Without a CNAPI URL the mock CNs run standalone (registered at once, reporting to no one). ' +
      'The data dir defaults to /data/mockcloud when it exists, else ~/.mockcloud. ' +
      'Other commands find this daemon through <data-dir>/daemon.json.',
  );
}

async function handler(argv: DaemonArgs & Record<string, unknown>): Promise<void> {
  const flags: RawSettings & { config?: string } = {};
  for (const s of SETTINGS) {
    const v = argv[s.key] ?? argv[s.flag];
    if (typeof v === 'string' || typeof v === 'number') flags[s.key] = v;
  }
  if (typeof argv.config === 'string') flags.config = argv.config;
  const config = await resolveConfig({
    flags,
    env: process.env,
    mdata: process.env.MOCKCLOUD_NO_MDATA === '1' ? noMdata : systemMdataReader(),
  });
  // Loaded here, not at the top: other commands need none of the daemon's modules.
  const { Daemon } = await import('../daemon/daemon.js');
  const daemon = new Daemon({ config });

  let stopping: Promise<void> | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    daemon.log.info({ signal }, 'stopping on signal');
    stopping = daemon.stop().then(
      () => {
        process.exitCode = 0;
      },
      (err: unknown) => {
        console.error(`mockcloud daemon: stop failed: ${(err as Error).message}`);
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  await daemon.start();
  const c = daemon.controlAddress;
  const lines = [
    `mockcloud daemon running (pid ${process.pid})`,
    `  data dir:     ${config.dataDir}`,
    `  control API:  ${c.url}`,
    `  mock CNs:     ${daemon.fleet.size}, cn-agent sockets on ${config.bindIp}${config.portRange ? ` ports ${config.portRange.join('-')}` : ''}`,
    `  CNAPI:        ${config.urls.cnapi ?? 'none (standalone)'}`,
    `  VMAPI:        ${config.urls.vmapi ?? 'none'}`,
    `  NAPI:         ${config.urls.napi ?? 'none'}`,
    `  IMGAPI:       ${config.urls.imgapi ?? 'none'}`,
    `  logs:         ${config.logFile ?? 'stderr'}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  // The control API's listening socket keeps the process alive until a signal stops it.
}

export const daemonCommand: CommandModule<object, DaemonArgs> = {
  command: 'daemon',
  describe: 'Run the daemon hosting every mock CN of a data dir (foreground; SIGTERM/SIGINT stop it)',
  builder,
  handler,
};
