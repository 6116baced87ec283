/**
 * What a daemon checks before it writes anything: that no other live daemon uses the data dir,
 * and that the addresses it must listen on are free (the control API's port when one is set,
 * --metrics-address, cmon-agent's port, the dev headnode's pinned ports). A start that would fail half-way (after
 * seeding a dev DC into the data dir, say) fails here instead, with a message naming the flag
 * to change, and leaves the data dir as it was (not even created).
 * Once those pass, the start makes the data dir and checks that it takes files, and that the
 * mock CNs can listen on the bind IP (`prepareDataDir`, `probeBindIp`).
 *
 * One port may move: with the embedded dev headnode (a laptop, CI), cmon-agent's default port
 * 9163 falls back to a free one when something else holds it, and says so. Against a real
 * Triton it does not: CMON scrapes every CN on 9163 and nowhere else, so a daemon on another
 * port would run with metrics no one can read.
 */
import { constants as fsConstants, promises as fsp } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { MockcloudError } from '../common/errors.js';
import { probeListen } from '../common/port-probe.js';
import { describeSystemError } from '../common/system-errors.js';
import { DEFAULT_CMON_PORT, settingHint, type DaemonConfig } from './config.js';
import { SETTINGS } from './settings.js';
import { isProcessAlive, readDaemonJson } from './daemon-json.js';

export interface PreflightOptions {
  /** The daemon will run the embedded dev headnode (no Triton address configured). */
  devMode: boolean;
  /** Data dirs this process's daemons are using (a second one in-process is refused too). */
  activeDataDirs?: ReadonlySet<string>;
  /** cmon-agent listens on config.cmonPort (false: the daemon runs other agent plug-ins). */
  cmonAgent?: boolean;
}

export interface PreflightResult {
  /** The configuration to start with (cmonPort may have moved). */
  config: DaemonConfig;
  /** One line each for the operator: what was changed and why. */
  notices: string[];
}

function flagOf(key: string): string {
  const s = SETTINGS.find((x) => x.key === key);
  return s ? `--${s.flag} (env ${s.env})` : key;
}

export async function preflight(config: DaemonConfig, opts: PreflightOptions): Promise<PreflightResult> {
  const notices: string[] = [];
  const out: DaemonConfig = { ...config, sources: { ...config.sources } };
  const dataDir = config.dataDir;

  if (opts.activeDataDirs?.has(dataDir)) {
    throw new MockcloudError('Conflict', `another mockcloud daemon of this process is using ${dataDir}`);
  }
  const other = await readDaemonJson(dataDir);
  if (other && other.pid !== process.pid && isProcessAlive(other.pid)) {
    throw new MockcloudError(
      'Conflict',
      `another mockcloud daemon (pid ${other.pid}, ${other.control.url}) is using ${dataDir}; ` +
        `stop it, or give this one another ${flagOf('dataDir')}`,
    );
  }

  if (config.controlPort !== 0) {
    const err = await probeListen('127.0.0.1', config.controlPort);
    if (err) {
      throw new MockcloudError(
        'Conflict',
        `the control API cannot listen on 127.0.0.1:${config.controlPort}: ${describeSystemError(err)}; ` +
          `choose another port with ${flagOf('controlPort')}, or 0 for any free port`,
      );
    }
  }

  // Port 0 too: the IP must be one of this host's.
  const listeners = [
    { what: 'metrics', key: 'metricsAddress' as const, at: config.metricsAddress },
    { what: 'the fleet page', key: 'uiAddress' as const, at: config.uiAddress, orNone: true },
  ];
  for (const l of listeners) {
    if (!l.at) continue;
    const { ip, port } = l.at;
    const err = await probeListen(ip, port);
    if (err) {
      throw new MockcloudError(
        'Conflict',
        `${l.what} cannot be served on ${ip}:${port}: ${describeSystemError(err)}; choose another address with ${flagOf(l.key)}${l.orNone ? ', or none for no page' : ''}`,
      );
    }
  }

  const cmonPort = config.cmonPort ?? DEFAULT_CMON_PORT;
  // With one socket per CN address ('loopback'), the addresses are known only as CNs load.
  if (opts.cmonAgent !== false && cmonPort !== 0 && (config.agentIps ?? 'shared') === 'shared') {
    const err = await probeListen(config.bindIp, cmonPort);
    if (err) {
      const where = `${config.bindIp}:${cmonPort}`;
      const chosen = config.sources.cmonPort !== undefined && config.sources.cmonPort !== 'default';
      if (opts.devMode && !chosen && err.code === 'EADDRINUSE') {
        out.cmonPort = 0;
        out.sources.cmonPort = 'default';
        notices.push(
          `cmon-agent: ${where} is in use (another mockcloud daemon, or a cmon-agent?), so it listens on a free port instead; ` +
            `pin one with ${flagOf('cmonPort')}`,
        );
      } else {
        const why = opts.devMode
          ? ''
          : ' CMON scrapes every compute node on port 9163 only, so with a real Triton the port must be free there;';
        throw new MockcloudError(
          'Conflict',
          `cmon-agent cannot listen on ${where}: ${describeSystemError(err)}; is another mockcloud daemon or a cmon-agent running?${why} ` +
            `free it, or choose another port with ${flagOf('cmonPort')}`,
        );
      }
    }
  }

  if (opts.devMode && config.headnodePorts) {
    for (const [svc, port] of Object.entries(config.headnodePorts)) {
      const err = await probeListen('127.0.0.1', port);
      if (err) {
        throw new MockcloudError(
          'Conflict',
          `the dev headnode's ${svc.toUpperCase()} cannot listen on 127.0.0.1:${port}: ${describeSystemError(err)}; ` +
            `choose other ports with ${flagOf('headnodePorts')}`,
        );
      }
    }
  }

  return { config: out, notices };
}

/** The dev-mode log file: `<data-dir>/logs/mockcloud.log`. */
export function devLogFile(dataDir: string): string {
  return path.join(dataDir, 'logs', 'mockcloud.log');
}

/** The data dir exists (made if need be) and takes files; else an error naming --data-dir. */
export async function prepareDataDir(dataDir: string): Promise<void> {
  try {
    await fsp.mkdir(dataDir, { recursive: true });
    await fsp.access(dataDir, fsConstants.W_OK);
  } catch (err) {
    throw new MockcloudError(
      'InvalidArgument',
      `cannot use ${dataDir} as the data dir: ${describeSystemError(err)}; choose another with ${settingHint('dataDir')}`,
      { cause: err },
    );
  }
}

/**
 * Every CN's cn-agent socket binds the bind IP: an address this host does not have would fail
 * each CN alone, after the data dir was read. One trial bind says it first, naming the flag.
 */
export async function probeBindIp(ip: string): Promise<void> {
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host: ip, port: 0, exclusive: true }, () => resolve());
    });
  } catch (err) {
    throw new MockcloudError(
      'InvalidArgument',
      `the mock CNs cannot listen on ${ip}: ${describeSystemError(err)}; give an address of this host with ${settingHint('bindIp')}`,
      { cause: err },
    );
  } finally {
    await new Promise<void>((resolve) => (probe.listening ? probe.close(() => resolve()) : resolve()));
  }
}
