/**
 * The daemon's configuration. Every setting is looked up in this order, first hit wins:
 *
 *   1. a command-line flag           (--cnapi-url ...)
 *   2. an environment variable       (MOCKCLOUD_CNAPI_URL ...)
 *   3. the config file               (--config / MOCKCLOUD_CONFIG, else <data-dir>/config.json)
 *   4. SmartOS mdata (`mdata-get`)   (sdc:datacenter_name, dnsDomain, ufdsAdmin, sdc:nics, mockcloudRoot)
 *   5. the default
 *
 * The Triton API URLs not given explicitly (1-3) are derived from the datacenter name and DNS
 * domain when both are known, as the original agents did: http://cnapi.<dc>.<domain> (and
 * http://sapi.<dc>.<domain>, where an agent's install adopts its instance).
 * The data dir cannot come from the config file (the file lives in it), except through --config.
 */
import { existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { readSmallTextFile } from '../common/bounded-file.js';
import { MockcloudError } from '../common/errors.js';
import { describeSystemError } from '../common/system-errors.js';
import { DEFAULT_ADMIN_UUID } from '../common/triton-defaults.js';
import { isUuid } from '../common/uuid.js';
import type { ReporterTimings } from '../agents/cn-agent/cnapi-reporter/timings.js';
import type { ServiceUrls } from '../runtime/agent-plugin.js';
import type { MdataReader } from './mdata.js';
import {
  DEFAULT_METRICS_PORT,
  invalidSetting,
  parseAgentIpMode,
  parseBooter,
  parseBoolean,
  parseCount,
  parseHeadnodePorts,
  parseListenAddressSetting,
  parsePort,
  parsePortRange,
  parseSeconds,
  SETTINGS,
  validateTimings,
  validateUrl,
  type AgentIpMode,
  type HeadnodePortSet,
  type RawSettings,
  type SettingKey,
} from './settings.js';
import type { ListenAddress } from '../common/listen-address.js';
import { parseUiAddress, type UiAddress } from '../ui/address.js';
import { resolveTiming } from '../timing/resolve.js';
import { MAX_NICE } from './thread-priority.js';
import type { TimingProfile } from '../timing/profile.js';
import { validateBootTimings, type BootTimings } from '../boot/timings.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { adminIpFromNicsArray(nics: unknown[]): string | undefined };

export const DEFAULT_DATACENTER_NAME = 'mockcloud';
export const DEFAULT_BIND_IP = '127.0.0.1';
/** cmon-agent's port on a real CN; CMON never asks for another. */
export const DEFAULT_CMON_PORT = 9163;

export type { ListenAddress };

/** Used when the host is not SmartOS (there, "Live Image" comes from `uname -v`, as the original). */
export { DEFAULT_PLATFORM } from '../common/triton-defaults.js';
import { DEFAULT_PLATFORM } from '../common/triton-defaults.js';

export interface DaemonConfig {
  dataDir: string;
  /** IP the mock CNs' cn-agent sockets bind to (their "CN Agent IP"). */
  bindIp: string;
  /** Ports for the mock CNs' sockets; absent = ephemeral (port 0), like the original. */
  portRange?: [number, number];
  /** The control API's port on 127.0.0.1; 0 = ephemeral (daemon.json says which). */
  controlPort: number;
  /** Where `GET /metrics` is served besides the control API (--metrics-address); absent: nowhere else. */
  metricsAddress?: ListenAddress;
  /**
   * cmon-agent's port (9163 like a real CN); 0 = ephemeral (daemon.json says which). Optional
   * so hand-built configs (tests) keep compiling: absent means the default.
   */
  cmonPort?: number;
  /**
   * Where the fleet web page listens (--ui-address, src/ui); null: no page. Absent means the
   * default, 127.0.0.1 with any free port (daemon.json's `ui` says which).
   */
  uiAddress?: UiAddress | null;
  /** Shared bind IP or one loopback address per CN; absent means 'shared'. */
  agentIps?: AgentIpMode;
  /**
   * The embedded dev headnode's ports, pinned (--headnode-ports): the same addresses at every
   * start. Absent: any free ports, new at each start.
   */
  headnodePorts?: HeadnodePortSet;
  urls: ServiceUrls;
  datacenterName: string;
  dnsDomain?: string;
  /** Owner of the admin NICs created for new CNs (mdata ufdsAdmin). */
  adminUuid: string;
  /** "Live Image" of new CNs whose profile names none. */
  platform: string;
  /**
   * Whether new CNs' dnet1 provides the `external` NIC tag. Absent: yes when the daemon runs
   * the embedded dev headnode (a dev DC's CNs are wired to its external network, so DAPI can
   * place VMs needing it), no otherwise (on a real DC, `mockcloud add-externals` does it).
   */
  externalNics?: boolean;
  logFile?: string;
  logLevel?: string;
  /** The config file that was read, if any. */
  configFile?: string;
  /**
   * cn-agent's command_execute runs scripts in a shell on this host, as the daemon's user
   * (off by default: anyone who can reach CNAPI could run anything here).
   */
  allowExecute?: boolean;
  /** How long a rebooting mock CN stays down, in seconds (server_reboot); absent = the timing's cn.boot. */
  bootSeconds?: number;
  /** Test-only shortening of the CNAPI traffic intervals (config file key `timings`). */
  timings?: Partial<ReporterTimings>;
  /**
   * Where the mock CNs' DHCP goes (booter's dhcpd, UDP), or 'none' (--no-booter): each CN's
   * admin NIC from NAPI directly and no PXE boot. Absent: the dev headnode's booter when it
   * runs, else none.
   */
  booter?: { ip: string; port: number } | 'none';
  /** Booter's HTTP root the CNs load their boot file from; absent: the dev booter's, else CNAPI's boot params. */
  booterHttpUrl?: string;
  /** The rack the relay names in option 82 (its circuit id); absent: the relay's remote id only. */
  bootRack?: string;
  /** Test-only scaling of the boot's DHCP schedule and retries (config file key `bootTimings`). */
  bootTimings?: Partial<BootTimings>;
  /** Tasks running at once across the fleet / per CN, and waiting; absent: cn-agent's defaults. */
  maxTasks?: number;
  maxTasksPerServer?: number;
  maxQueuedTasks?: number;
  /** Open connections across all CN sockets; absent: the default. */
  maxConnections?: number;
  /** Open connections to one CN's socket; absent: a quarter of maxConnections. */
  maxConnectionsPerServer?: number;
  /** Open connections to the control API; absent: the default (1024). */
  maxControlConnections?: number;
  /** Nice levels every thread but the heartbeat thread runs below it (Linux); absent: thread-priority.ts's default. */
  mainThreadNice?: number;
  /**
   * The seed of every random draw a creation makes (CN uuids, hostnames, serials, MACs, disk
   * names, profiles from a mix) and, for the events engine, event targets and fault decisions;
   * absent = unpredictable.
   */
  seed?: string;
  /** Where profile files (*.json, *.yaml, *.yml) add hardware profiles; absent = <data-dir>/profiles. */
  profilesDir?: string;
  /** `--timing`: a built-in timing profile's name or a timing file, as given; absent: instant. */
  timing?: string;
  /** That timing, read (a file's problems refuse the config, each at its line). */
  timingProfile?: TimingProfile;
  /** Where each setting came from, for `GET /config` and the start-up log. */
  sources: Record<string, ConfigSource>;
}

/** 'headnode': filled in by the daemon from its embedded dev headnode. */
export type ConfigSource = 'flag' | 'env' | 'file' | 'mdata' | 'derived' | 'default' | 'headnode';

export interface ConfigInputs {
  flags?: RawSettings & { config?: string };
  env?: NodeJS.ProcessEnv;
  mdata: MdataReader;
}

const FILE_KEYS = new Set<string>([...SETTINGS.map((s) => s.key), 'timings', 'bootTimings']);

export async function resolveConfig(inputs: ConfigInputs): Promise<DaemonConfig> {
  const flags = inputs.flags ?? {};
  const env = inputs.env ?? {};
  const sources: Record<string, ConfigSource> = {};

  const fromEnv = (key: SettingKey): string | undefined => {
    const s = SETTINGS.find((x) => x.key === key)!;
    const v = env[s.env];
    return v === undefined || v === '' ? undefined : v;
  };
  const fromFlag = (key: SettingKey): string | undefined => {
    const v = flags[key];
    return v === undefined || v === '' ? undefined : String(v);
  };

  // The data dir first: it locates the config file.
  let dataDir = fromFlag('dataDir') ?? fromEnv('dataDir');
  sources.dataDir = fromFlag('dataDir') !== undefined ? 'flag' : dataDir !== undefined ? 'env' : 'default';
  const explicitFile = (flags.config ?? env.MOCKCLOUD_CONFIG) || undefined;
  let file: Record<string, unknown> = {};
  let configFile: string | undefined;
  if (explicitFile) {
    configFile = path.resolve(explicitFile);
    file = await readConfigFile(configFile, true);
    if (dataDir === undefined && typeof file.dataDir === 'string') {
      dataDir = file.dataDir;
      sources.dataDir = 'file';
    }
  }
  if (dataDir === undefined) {
    const root = await inputs.mdata('mockcloudRoot');
    if (root) {
      dataDir = root;
      sources.dataDir = 'mdata';
    }
  }
  dataDir = path.resolve(dataDir ?? defaultDataDir());
  if (!explicitFile) {
    const candidate = path.join(dataDir, 'config.json');
    const read = await readConfigFile(candidate, false);
    if (read !== undefined) {
      file = read;
      configFile = candidate;
    }
  }

  const lookup = async (key: SettingKey, mdataKey?: string): Promise<string | undefined> => {
    const f = fromFlag(key);
    if (f !== undefined) return ((sources[key] = 'flag'), f);
    const e = fromEnv(key);
    if (e !== undefined) return ((sources[key] = 'env'), e);
    const c = file[key];
    if (c !== undefined && c !== null && c !== '') return ((sources[key] = 'file'), String(c));
    if (mdataKey) {
      const m = await inputs.mdata(mdataKey);
      if (m !== undefined) return ((sources[key] = 'mdata'), m);
    }
    return undefined;
  };

  const datacenterName = (await lookup('datacenterName', 'sdc:datacenter_name')) ?? DEFAULT_DATACENTER_NAME;
  sources.datacenterName ??= 'default';
  const dnsDomain = await lookup('dnsDomain', 'dnsDomain');
  const urls: ServiceUrls = {};
  for (const svc of ['cnapi', 'vmapi', 'napi', 'imgapi', 'sapi', 'fwapi'] as const) {
    const key = `${svc}Url` as const;
    let url = await lookup(key);
    if (url === undefined && dnsDomain && sources.datacenterName !== 'default') {
      url = `http://${svc}.${datacenterName}.${dnsDomain}`;
      sources[key] = 'derived';
    }
    if (url !== undefined) urls[svc] = validateUrl(key, url);
  }

  const fast = await lookup('fwapiFastUrl');
  if (fast !== undefined) {
    let u: URL | undefined;
    try {
      u = new URL(fast);
    } catch {
      u = undefined;
    }
    if (!u || u.protocol !== 'tcp:' || !u.hostname || !u.port) throw invalidSetting('fwapiFastUrl', `${JSON.stringify(fast)} is not tcp://HOST:PORT`);
    urls.fwapiFast = `tcp://${u.host}`;
  }

  let bindIp = await lookup('bindIp');
  if (bindIp === undefined) {
    const nics = await inputs.mdata('sdc:nics');
    const ip = nics ? adminIpFromNicsJson(nics) : undefined;
    if (ip) {
      bindIp = ip;
      sources.bindIp = 'mdata';
    }
  }
  bindIp ??= ((sources.bindIp = 'default'), DEFAULT_BIND_IP);
  if (net.isIP(bindIp) === 0) throw invalidSetting('bindIp', `bind IP ${JSON.stringify(bindIp)} is not an IP address`);
  // Each CN advertises this address to CNAPI as its `CN Agent IP`: it must be one CNAPI can reach.
  if (/^(0\.0\.0\.0|::|0:0:0:0:0:0:0:0)$/.test(bindIp)) {
    throw invalidSetting('bindIp', `bind IP ${bindIp} is a wildcard; each mock CN advertises it to CNAPI as its CN Agent IP, so give the zone's admin IP`);
  }

  const portRangeText = await lookup('portRange');
  const controlPortText = await lookup('controlPort');
  const cmonPortText = await lookup('cmonPort');
  const headnodePortsText = await lookup('headnodePorts');
  const agentIps = parseAgentIpMode((await lookup('agentIps')) ?? ((sources.agentIps = 'default'), 'shared'));
  const adminUuid = (await lookup('adminUuid', 'ufdsAdmin')) ?? ((sources.adminUuid = 'default'), DEFAULT_ADMIN_UUID);
  if (!isUuid(adminUuid)) throw invalidSetting('adminUuid', `admin uuid ${JSON.stringify(adminUuid)} is not a UUID`);
  const platform = (await lookup('platform')) ?? ((sources.platform = 'default'), hostPlatform());
  const allowExecuteText = await lookup('allowExecute');
  const bootSecondsText = await lookup('bootSeconds');
  const externalNicsText = await lookup('externalNics');
  const externalNics = externalNicsText === undefined ? undefined : parseBoolean('externalNics', externalNicsText);
  const logFile = await lookup('logFile');
  const logLevel = await lookup('logLevel');
  if (logLevel !== undefined && !['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(logLevel)) {
    throw invalidSetting('logLevel', `log level ${JSON.stringify(logLevel)} is not one of trace, debug, info, warn, error, fatal`);
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(datacenterName)) {
    throw invalidSetting('datacenterName', `datacenter name ${JSON.stringify(datacenterName)} is not a DNS label`);
  }

  const config: DaemonConfig = {
    dataDir,
    bindIp,
    controlPort: controlPortText === undefined ? ((sources.controlPort = 'default'), 0) : parsePort('controlPort', controlPortText, true),
    cmonPort: cmonPortText === undefined ? ((sources.cmonPort = 'default'), DEFAULT_CMON_PORT) : parsePort('cmonPort', cmonPortText, true),
    agentIps,
    urls,
    datacenterName,
    adminUuid: adminUuid.toLowerCase(),
    platform,
    sources,
  };
  if (portRangeText !== undefined) config.portRange = parsePortRange(portRangeText);
  const uiAddressText = await lookup('uiAddress');
  if (uiAddressText === undefined) sources.uiAddress = 'default';
  else {
    const ui = parseUiAddress(uiAddressText);
    if (typeof ui === 'string') throw invalidSetting('uiAddress', `fleet page address ${ui}`);
    config.uiAddress = ui;
  }
  if (headnodePortsText !== undefined) config.headnodePorts = parseHeadnodePorts(headnodePortsText);
  config.allowExecute = allowExecuteText === undefined ? ((sources.allowExecute = 'default'), false) : parseBoolean('allowExecute', allowExecuteText);
  if (bootSecondsText === undefined) sources.bootSeconds = 'default';
  else config.bootSeconds = parseSeconds('bootSeconds', bootSecondsText);
  if (dnsDomain !== undefined) config.dnsDomain = dnsDomain;
  if (logFile !== undefined) config.logFile = path.resolve(logFile);
  if (logLevel !== undefined) config.logLevel = logLevel;
  if (externalNics !== undefined) config.externalNics = externalNics;
  if (configFile !== undefined) config.configFile = configFile;
  if (file.timings !== undefined) config.timings = validateTimings(file.timings);
  if (file.bootTimings !== undefined) config.bootTimings = validateBootTimings(file.bootTimings);
  const booterText = await lookup('booter');
  if (booterText !== undefined) config.booter = parseBooter(booterText);
  const booterHttpUrl = await lookup('booterHttpUrl');
  if (booterHttpUrl !== undefined) config.booterHttpUrl = validateUrl('booterHttpUrl', booterHttpUrl);
  const bootRack = await lookup('bootRack');
  if (bootRack !== undefined) {
    if (!/^[A-Za-z0-9_-]{1,20}$/.test(bootRack)) throw invalidSetting('bootRack', `rack ${JSON.stringify(bootRack)} must be 1-20 letters, digits, '_' or '-' (booter makes it the NIC tag admin_rack_<rack>)`);
    config.bootRack = bootRack;
  }
  const seed = await lookup('seed');
  if (seed !== undefined) {
    if (seed.length > 256) throw invalidSetting('seed', 'a seed is at most 256 characters');
    config.seed = seed;
  }
  const profilesDir = await lookup('profilesDir');
  if (profilesDir !== undefined) config.profilesDir = path.resolve(profilesDir);
  const timing = await lookup('timing');
  if (timing === undefined) sources.timing = 'default';
  else {
    try {
      config.timingProfile = await resolveTiming(timing, sources.timing === 'file' && configFile ? path.dirname(configFile) : process.cwd());
    } catch (err) {
      throw invalidSetting('timing', (err as Error).message);
    }
    config.timing = timing;
  }
  const metricsAddress = await lookup('metricsAddress', 'mockcloudMetricsAddress');
  if (metricsAddress !== undefined) config.metricsAddress = parseListenAddressSetting('metricsAddress', metricsAddress, DEFAULT_METRICS_PORT);
  for (const key of ['maxTasks', 'maxTasksPerServer', 'maxQueuedTasks', 'maxConnections', 'maxConnectionsPerServer', 'maxControlConnections'] as const) {
    const text = await lookup(key);
    if (text !== undefined) config[key] = parseCount(key, text, key === 'maxQueuedTasks');
  }
  const nice = await lookup('mainThreadNice');
  if (nice !== undefined) {
    const n = parseCount('mainThreadNice', nice, true);
    if (n > MAX_NICE) throw invalidSetting('mainThreadNice', `${n} is past the lowest priority, ${MAX_NICE}`);
    config.mainThreadNice = n;
  }
  return config;
}

/** `/data/mockcloud` in a mockcloud0 zone (the delegated dataset), else ~/.mockcloud. */
export function defaultDataDir(): string {
  return existsSync('/data/mockcloud') ? '/data/mockcloud' : path.join(os.homedir(), '.mockcloud');
}

/** The platform stamp of a SmartOS host (`joyent_20210826T002459Z` → `20210826T002459Z`). */
export function hostPlatform(): string {
  const m = /joyent_(\S+)/.exec(os.version());
  return m ? m[1]! : DEFAULT_PLATFORM;
}

async function readConfigFile(file: string, required: boolean): Promise<Record<string, unknown>>;
async function readConfigFile(file: string, required: false): Promise<Record<string, unknown> | undefined>;
async function readConfigFile(file: string, required: boolean): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readSmallTextFile(file, 'a config file');
  } catch (err) {
    if (err instanceof MockcloudError) throw err;
    // No file there, or no data dir to hold one yet (the daemon says what is wrong with it).
    const code = (err as NodeJS.ErrnoException).code;
    if (!required && (code === 'ENOENT' || code === 'ENOTDIR')) return undefined;
    throw new MockcloudError(
      'InvalidArgument',
      `cannot read config file ${file}: ${describeSystemError(err)}${required ? '; give another with --config (env MOCKCLOUD_CONFIG)' : ''}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new MockcloudError('InvalidArgument', `config file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MockcloudError('InvalidArgument', `config file ${file} must hold a JSON object`);
  }
  const unknown = Object.keys(value).filter((k) => !FILE_KEYS.has(k));
  if (unknown.length > 0) {
    throw new MockcloudError(
      'InvalidArgument',
      `config file ${file}: unknown key(s) ${unknown.join(', ')}; known: ${[...FILE_KEYS].join(', ')}`,
    );
  }
  return value as Record<string, unknown>;
}

function adminIpFromNicsJson(text: string): string | undefined {
  try {
    const nics = JSON.parse(text) as unknown;
    return Array.isArray(nics) ? netconfig.adminIpFromNicsArray(nics) || undefined : undefined;
  } catch {
    return undefined;
  }
}

/** How a user changes a setting, for error messages: "--control-port (env MOCKCLOUD_CONTROL_PORT)". */
export function settingHint(key: SettingKey): string {
  const s = SETTINGS.find((x) => x.key === key)!;
  return `--${s.flag} (env ${s.env})`;
}
