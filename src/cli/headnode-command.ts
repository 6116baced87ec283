/**
 * `mockcloud headnode`: the embedded dev headnode (CNAPI, VMAPI, NAPI, IMGAPI, SAPI and PAPI subsets) with
 * the DC's headnode server (one mock CN, as every Triton DC has) and no compute nodes, in the
 * foreground, for a daemon elsewhere (`mockcloud daemon --cnapi-url ...`) or for tools written
 * against Triton. State persists in <data-dir>/headnode/ and <data-dir>/servers/; the addresses
 * are printed and written to <data-dir>/headnode.json. SIGTERM/SIGINT stop it cleanly (exit 0).
 */
import net from 'node:net';
import path from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { createLogger } from '../common/log.js';
import { DEFAULT_ADMIN_UUID } from '../common/triton-defaults.js';
import { DEFAULT_DATACENTER_NAME, defaultDataDir } from '../daemon/config.js';
import { isProcessAlive, readDaemonJson } from '../daemon/daemon-json.js';
import { isUuid } from '../common/uuid.js';
import { CliError, UsageError } from './daemon-client.js';

interface HeadnodeArgs {
  'data-dir'?: string;
  host: string;
  'cnapi-port': number;
  'vmapi-port': number;
  'napi-port': number;
  'imgapi-port': number;
  'sapi-port': number;
  'papi-port': number;
  'fwapi-port': number;
  'datacenter-name': string;
  'admin-uuid': string;
  'log-file'?: string;
  'log-level'?: string;
}

const SERVICES = ['cnapi', 'vmapi', 'napi', 'imgapi', 'sapi', 'papi', 'fwapi'] as const;

function builder(y: Argv): Argv<HeadnodeArgs> {
  let out = y
    .option('data-dir', { type: 'string', describe: 'where the state lives (<data-dir>/headnode/, headnode.json) (env MOCKCLOUD_DATA_DIR)' })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'listen address of all seven services' }) as Argv<HeadnodeArgs>;
  for (const svc of SERVICES) {
    out = out.option(`${svc}-port`, {
      type: 'number',
      default: 0,
      describe: `${svc.toUpperCase()} port (0: any free port; the printed address and headnode.json say which)`,
    }) as Argv<HeadnodeArgs>;
  }
  return out
    .option('datacenter-name', { type: 'string', default: DEFAULT_DATACENTER_NAME, describe: "CNAPI's datacenter_name for new servers" })
    .option('admin-uuid', { type: 'string', default: DEFAULT_ADMIN_UUID, describe: 'the DC admin user (owner of admin NICs and images)' })
    .option('log-file', { type: 'string', describe: 'bunyan log file (default: stderr)' })
    .option('log-level', { type: 'string', describe: 'bunyan log level (default info; env MOCKCLOUD_LOG_LEVEL)' }) as Argv<HeadnodeArgs>;
}

async function handler(argv: HeadnodeArgs): Promise<void> {
  // Its own data dir, not a client's guess at where a daemon runs (clientDataDir).
  const dataDir = path.resolve(argv['data-dir'] || process.env.MOCKCLOUD_DATA_DIR || defaultDataDir());
  if (net.isIP(argv.host) === 0) throw new UsageError(`--host ${JSON.stringify(argv.host)} is not an IP address`);
  const ports: Record<string, number> = {};
  for (const svc of SERVICES) {
    const p = argv[`${svc}-port`];
    if (!Number.isInteger(p) || p < 0 || p > 65535) throw new UsageError(`--${svc}-port must be a port number (0-65535), not ${JSON.stringify(p)}`);
    ports[svc] = p;
  }
  if (!isUuid(argv['admin-uuid'])) throw new UsageError(`--admin-uuid ${JSON.stringify(argv['admin-uuid'])} is not a UUID`);
  const level = argv['log-level'];
  if (level !== undefined && !['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(level)) {
    throw new UsageError(`--log-level ${JSON.stringify(level)} is not one of trace, debug, info, warn, error, fatal`);
  }
  // A daemon of this data dir may run its own embedded headnode on the same state: refuse.
  const running = await readDaemonJson(dataDir);
  if (running && isProcessAlive(running.pid)) {
    throw new CliError(`a mockcloud daemon (pid ${running.pid}) is using ${dataDir}; its headnode (if any) is in <data-dir>/headnode.json`);
  }

  const log = createLogger({
    name: 'mockcloud-headnode',
    ...(argv['log-file'] ? { path: argv['log-file'] } : {}),
    ...(level ? { level: level as 'info' } : {}),
  });
  // The dev headnode with its headnode server: a daemon hosting no compute nodes, whose
  // embedded headnode is the whole point. Compute nodes come from daemons pointed at it.
  const { resolveConfig } = await import('../daemon/config.js');
  const { noMdata } = await import('../daemon/mdata.js');
  const { Daemon } = await import('../daemon/daemon.js');
  const config = await resolveConfig({
    flags: {
      dataDir,
      datacenterName: argv['datacenter-name'],
      adminUuid: argv['admin-uuid'].toLowerCase(),
      // A daemon with CNs may run on this host too: cmon-agent's 9163 is its.
      cmonPort: 0,
      ...(argv['log-file'] ? { logFile: argv['log-file'] } : {}),
      ...(level ? { logLevel: level } : {}),
    },
    env: {},
    mdata: noMdata,
  });
  const daemon = new Daemon({ config, log, embeddedHeadnode: { host: argv.host, ports } });

  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping on signal');
    daemon.stop().then(
      () => {
        // One line, as the daemon's Ctrl-C leaves: what stopped and where its state stays.
        process.stdout.write(`mockcloud dev headnode stopped (pid ${process.pid}); its state is in ${dataDir}, the next start loads it\n`);
        process.exitCode = 0;
      },
      (err: unknown) => {
        console.error(`mockcloud headnode: stop failed: ${(err as Error).message}`);
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  await daemon.start();
  const headnode = daemon.headnode!;
  const urls = headnode.urls;
  const server = daemon.fleet.headnode();
  const booter = headnode.booterAddresses;
  const booterFlags = booter ? ` --booter ${booter.dhcp.ip}:${booter.dhcp.port} --booter-http-url ${booter.http}` : '';
  const lines = [
    `mockcloud dev headnode running (pid ${process.pid})`,
    `  data dir:     ${dataDir}`,
    `  CNAPI:        ${urls.cnapi}`,
    `  VMAPI:        ${urls.vmapi}`,
    `  NAPI:         ${urls.napi}`,
    `  IMGAPI:       ${urls.imgapi}`,
    `  SAPI:         ${urls.sapi}`,
    `  PAPI:         ${urls.papi}`,
    `  FWAPI:        ${urls.fwapi} (updates ${urls.fwapiFast})`,
    ...(booter ? [`  booter:       DHCP ${booter.dhcp.ip}:${booter.dhcp.port} (UDP), boot files ${booter.http}`] : []),
    `  headnode server: ${server ? `${server.uuid} (cn-agent ${server.agentAddress?.ip ?? '-'}:${server.agentAddress?.port ?? '-'})` : 'none'}`,
    `  addresses in: ${headnode.headnodeJsonPath}`,
    `  logs:         ${argv['log-file'] ?? 'stderr'}`,
    `Point a daemon at it: mockcloud daemon --cnapi-url ${urls.cnapi} --vmapi-url ${urls.vmapi} --napi-url ${urls.napi} --imgapi-url ${urls.imgapi} --sapi-url ${urls.sapi}${booterFlags}`,
    'Ctrl-C stops it.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

export const headnodeCommand: CommandModule<object, HeadnodeArgs> = {
  command: 'headnode',
  describe: 'Run the embedded dev headnode (CNAPI, VMAPI, NAPI, IMGAPI, SAPI, PAPI subsets) alone on loopback ports (foreground)',
  builder,
  handler,
};
