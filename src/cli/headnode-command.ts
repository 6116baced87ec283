/**
 * `mockcloud headnode`: the embedded dev headnode (CNAPI, VMAPI, NAPI and IMGAPI subsets) alone,
 * in the foreground, for a daemon elsewhere (`mockcloud daemon --cnapi-url ...`) or for tools
 * written against Triton. State persists in <data-dir>/headnode/; the addresses are printed and
 * written to <data-dir>/headnode.json. SIGTERM/SIGINT stop it cleanly (exit 0).
 */
import net from 'node:net';
import type { Argv, CommandModule } from 'yargs';
import { createLogger } from '../common/log.js';
import { DEFAULT_ADMIN_UUID } from '../common/triton-defaults.js';
import { DEFAULT_DATACENTER_NAME } from '../daemon/config.js';
import { isProcessAlive, readDaemonJson } from '../daemon/daemon-json.js';
import { isUuid } from '../common/uuid.js';
import { clientDataDir, CliError } from './daemon-client.js';

interface HeadnodeArgs {
  'data-dir'?: string;
  host: string;
  'cnapi-port': number;
  'vmapi-port': number;
  'napi-port': number;
  'imgapi-port': number;
  'sapi-port': number;
  'datacenter-name': string;
  'admin-uuid': string;
  'log-file'?: string;
  'log-level'?: string;
}

const SERVICES = ['cnapi', 'vmapi', 'napi', 'imgapi', 'sapi'] as const;

function builder(y: Argv): Argv<HeadnodeArgs> {
  let out = y
    .option('data-dir', { type: 'string', describe: 'where the state lives (<data-dir>/headnode/, headnode.json) (env MOCKCLOUD_DATA_DIR)' })
    .option('host', { type: 'string', default: '127.0.0.1', describe: 'listen address of all five services' }) as Argv<HeadnodeArgs>;
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
  const dataDir = clientDataDir(argv['data-dir']);
  if (net.isIP(argv.host) === 0) throw new CliError(`--host ${JSON.stringify(argv.host)} is not an IP address`);
  const ports: Record<string, number> = {};
  for (const svc of SERVICES) {
    const p = argv[`${svc}-port`];
    if (!Number.isInteger(p) || p < 0 || p > 65535) throw new CliError(`--${svc}-port must be a port number (0-65535), not ${JSON.stringify(p)}`);
    ports[svc] = p;
  }
  if (!isUuid(argv['admin-uuid'])) throw new CliError(`--admin-uuid ${JSON.stringify(argv['admin-uuid'])} is not a UUID`);
  const level = argv['log-level'];
  if (level !== undefined && !['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(level)) {
    throw new CliError(`--log-level ${JSON.stringify(level)} is not one of trace, debug, info, warn, error, fatal`);
  }
  // A daemon of this data dir may run its own embedded headnode on the same state: refuse.
  const daemon = await readDaemonJson(dataDir);
  if (daemon && isProcessAlive(daemon.pid)) {
    throw new CliError(`a mockcloud daemon (pid ${daemon.pid}) is using ${dataDir}; its headnode (if any) is in <data-dir>/headnode.json`);
  }

  const log = createLogger({
    name: 'mockcloud-headnode',
    ...(argv['log-file'] ? { path: argv['log-file'] } : {}),
    ...(level ? { level: level as 'info' } : {}),
  });
  const { Headnode } = await import('../headnode/index.js');
  const headnode = new Headnode({
    dataDir,
    log,
    host: argv.host,
    ports,
    datacenter: argv['datacenter-name'],
    adminUuid: argv['admin-uuid'].toLowerCase(),
  });

  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping on signal');
    headnode.stop().then(
      () => {
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

  const urls = await headnode.start();
  const lines = [
    `mockcloud dev headnode running (pid ${process.pid})`,
    `  data dir:     ${dataDir}`,
    `  CNAPI:        ${urls.cnapi}`,
    `  VMAPI:        ${urls.vmapi}`,
    `  NAPI:         ${urls.napi}`,
    `  IMGAPI:       ${urls.imgapi}`,
    `  SAPI:         ${urls.sapi}`,
    `  addresses in: ${headnode.headnodeJsonPath}`,
    `  logs:         ${argv['log-file'] ?? 'stderr'}`,
    `Point a daemon at it: mockcloud daemon --cnapi-url ${urls.cnapi} --vmapi-url ${urls.vmapi} --napi-url ${urls.napi} --imgapi-url ${urls.imgapi} --sapi-url ${urls.sapi}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

export const headnodeCommand: CommandModule<object, HeadnodeArgs> = {
  command: 'headnode',
  describe: 'Run the embedded dev headnode (CNAPI, VMAPI, NAPI, IMGAPI, SAPI subsets) alone on loopback ports (foreground)',
  builder,
  handler,
};
