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
import { promises as fsp, existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { MockcloudError } from '../common/errors.js';
import { describeSystemError } from '../common/system-errors.js';
import { DEFAULT_ADMIN_UUID } from '../common/triton-defaults.js';
import { isUuid } from '../common/uuid.js';
import type { ReporterTimings } from '../agents/cn-agent/cnapi-reporter/timings.js';
import type { ServiceUrls } from '../runtime/agent-plugin.js';
import type { MdataReader } from './mdata.js';
import { parseListenAddress, type ListenAddress } from '../common/listen-address.js';
import { parseUiAddress, type UiAddress } from '../ui/address.js';
import { resolveTiming } from '../timing/resolve.js';
import type { TimingProfile } from '../timing/profile.js';
import { validateBootTimings, type BootTimings } from '../boot/timings.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { adminIpFromNicsArray(nics: unknown[]): string | undefined };

export const DEFAULT_DATACENTER_NAME = 'mockcloud';
export const DEFAULT_BIND_IP = '127.0.0.1';
/** cmon-agent's port on a real CN; CMON never asks for another. */
export const DEFAULT_CMON_PORT = 9163;
/** The port Triton's services serve `/metrics` on (node-triton-metrics); --metrics-address without one. */
export const DEFAULT_METRICS_PORT = 8881;

export type { ListenAddress };

/**
 * How the mock CNs get their `CN Agent IP`:
 *   shared     every CN's cn-agent socket binds the bind IP (one address, one port per CN);
 *   loopback   (Linux) every CN gets its own 127.x.y.z address (agent-ips.ts), so CMON's
 *              `http://<CN Agent IP>:9163/v1/gz/metrics` reaches exactly that CN.
 */
export type AgentIpMode = 'shared' | 'loopback';
export const AGENT_IP_MODES: readonly AgentIpMode[] = ['shared', 'loopback'];
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

/** One row per setting: its flag, environment variable and config file key. */
export const SETTINGS = [
  { key: 'dataDir', flag: 'data-dir', env: 'MOCKCLOUD_DATA_DIR', help: 'the data dir holding servers/<uuid>/' },
  { key: 'cnapiUrl', flag: 'cnapi-url', env: 'MOCKCLOUD_CNAPI_URL', help: 'CNAPI base URL' },
  { key: 'vmapiUrl', flag: 'vmapi-url', env: 'MOCKCLOUD_VMAPI_URL', help: 'VMAPI base URL' },
  { key: 'napiUrl', flag: 'napi-url', env: 'MOCKCLOUD_NAPI_URL', help: 'NAPI base URL' },
  { key: 'imgapiUrl', flag: 'imgapi-url', env: 'MOCKCLOUD_IMGAPI_URL', help: 'IMGAPI base URL' },
  {
    key: 'sapiUrl',
    flag: 'sapi-url',
    env: 'MOCKCLOUD_SAPI_URL',
    help: "SAPI base URL: every mock CN's agent instances are adopted there (RFD 82) and deleted with the CN",
  },
  {
    key: 'fwapiUrl',
    flag: 'fwapi-url',
    env: 'MOCKCLOUD_FWAPI_URL',
    help: "FWAPI base URL: every mock CN's firewaller resolves its VMs' rules there and takes its updates (fast, port 2020)",
  },
  {
    key: 'fwapiFastUrl',
    flag: 'fwapi-fast-url',
    env: 'MOCKCLOUD_FWAPI_FAST_URL',
    help: "FWAPI's update stream as tcp://HOST:PORT (default: FWAPI's host, port 2020, as firewaller's config.json says)",
  },
  { key: 'bindIp', flag: 'bind-ip', env: 'MOCKCLOUD_BIND_IP', help: "IP for the mock CNs' cn-agent sockets" },
  { key: 'portRange', flag: 'port-range', env: 'MOCKCLOUD_PORT_RANGE', help: 'LO-HI ports for those sockets (default: ephemeral)' },
  { key: 'controlPort', flag: 'control-port', env: 'MOCKCLOUD_CONTROL_PORT', help: 'control API port on 127.0.0.1 (default 0: ephemeral)' },
  {
    key: 'metricsAddress',
    flag: 'metrics-address',
    env: 'MOCKCLOUD_METRICS_ADDRESS',
    help:
      `also serve GET /metrics (Prometheus text; always on the control API) on IP[:PORT] for a scraper on another host ` +
      `(port default ${DEFAULT_METRICS_PORT}, 0: any free one; mdata mockcloudMetricsAddress; default: not served elsewhere; docs/metrics.md)`,
  },
  {
    key: 'cmonPort',
    flag: 'cmon-port',
    env: 'MOCKCLOUD_CMON_PORT',
    help: 'cmon-agent port (default 9163 like a real CN; with the embedded dev headnode a free one when 9163 is taken; 0: ephemeral)',
  },
  {
    key: 'uiAddress',
    flag: 'ui-address',
    env: 'MOCKCLOUD_UI_ADDRESS',
    help:
      "where the live fleet web page listens (mockcloud ui prints its URL): IP[:PORT], or none (default 127.0.0.1, any free port); " +
      'on an address other hosts reach, they see the fleet and can start and end events (docs/ui.md)',
  },
  {
    key: 'headnodePorts',
    flag: 'headnode-ports',
    env: 'MOCKCLOUD_HEADNODE_PORTS',
    help:
      "pin the embedded dev headnode's ports across restarts: a base port N (CNAPI N, VMAPI N+1, NAPI N+2, IMGAPI N+3, " +
      'SAPI N+4, FWAPI N+5, its update stream N+6) or five ports CNAPI,VMAPI,NAPI,IMGAPI,SAPI (FWAPI on any free ones) or seven ' +
      'CNAPI,VMAPI,NAPI,IMGAPI,SAPI,FWAPI,FWAPI-UPDATES (default: any free ports)',
  },
  {
    key: 'agentIps',
    flag: 'agent-ips',
    env: 'MOCKCLOUD_AGENT_IPS',
    help: "'shared' (every CN on the bind IP) or 'loopback' (Linux: each CN its own 127.x.y.z CN Agent IP; default shared)",
  },
  { key: 'datacenterName', flag: 'datacenter-name', env: 'MOCKCLOUD_DATACENTER_NAME', help: 'sysinfo "Datacenter Name" of new CNs' },
  { key: 'dnsDomain', flag: 'dns-domain', env: 'MOCKCLOUD_DNS_DOMAIN', help: 'DNS domain for derived API URLs' },
  { key: 'adminUuid', flag: 'admin-uuid', env: 'MOCKCLOUD_ADMIN_UUID', help: 'owner of new admin NICs (mdata ufdsAdmin)' },
  { key: 'platform', flag: 'platform', env: 'MOCKCLOUD_PLATFORM', help: 'sysinfo "Live Image" of new CNs' },
  {
    key: 'externalNics',
    flag: 'external-nics',
    env: 'MOCKCLOUD_EXTERNAL_NICS',
    help: "true or false: new CNs' dnet1 on the external NIC tag (default: true with the embedded dev headnode, else false)",
  },
  { key: 'logFile', flag: 'log-file', env: 'MOCKCLOUD_LOG_FILE', help: 'bunyan log file (default: <data-dir>/logs/mockcloud.log with the embedded dev headnode, else stderr)' },
  { key: 'logLevel', flag: 'log-level', env: 'MOCKCLOUD_LOG_LEVEL', help: 'bunyan log level (default info)' },
  { key: 'maxTasks', flag: 'max-tasks', env: 'MOCKCLOUD_MAX_TASKS', help: 'cn-agent tasks running at once across all CNs (default 128)' },
  {
    key: 'maxTasksPerServer',
    flag: 'max-tasks-per-server',
    env: 'MOCKCLOUD_MAX_TASKS_PER_SERVER',
    help: 'cn-agent tasks running at once on one CN (default 16); more wait their turn',
  },
  {
    key: 'maxQueuedTasks',
    flag: 'max-queued-tasks',
    env: 'MOCKCLOUD_MAX_QUEUED_TASKS',
    help: 'tasks waiting for their turn (default 4096); beyond it cn-agent answers 503',
  },
  {
    key: 'maxConnections',
    flag: 'max-connections',
    env: 'MOCKCLOUD_MAX_CONNECTIONS',
    help: "open connections across all CNs' cn-agent sockets (default 6144); beyond it new ones are closed",
  },
  {
    key: 'allowExecute',
    flag: 'allow-execute',
    env: 'MOCKCLOUD_ALLOW_EXECUTE',
    boolean: true,
    help:
      "let CNAPI's execute endpoint (cn-agent command_execute) run scripts in a shell on this host as the " +
      "daemon's user, with mock sysinfo/vmadm/zfs/zpool/imgadm commands (default off; see docs/execute.md)",
  },
  {
    key: 'bootSeconds',
    flag: 'boot-seconds',
    env: 'MOCKCLOUD_BOOT_SECONDS',
    help: "how long a rebooting mock CN stays down (seconds; default: the timing profile's cn.boot, 10 s on instant)",
  },
  {
    key: 'booter',
    flag: 'booter',
    env: 'MOCKCLOUD_BOOTER',
    help:
      "where the mock CNs boot from: booter's DHCP IP:PORT (sdc-booter's dhcpd, which answers relayed requests by unicast); " +
      "'none' or --no-booter: no PXE boot, each new CN's admin NIC from NAPI directly (default: the dev headnode's booter, else none; docs/boot.md)",
  },
  {
    key: 'booterHttpUrl',
    flag: 'booter-http-url',
    env: 'MOCKCLOUD_BOOTER_HTTP_URL',
    help: "booter's HTTP root the CNs load their boot file (boot.ipxe.01<MAC>) from (default: the dev headnode's booter; without one the boot params come from CNAPI)",
  },
  {
    key: 'bootRack',
    flag: 'boot-rack',
    env: 'MOCKCLOUD_BOOT_RACK',
    help:
      "the rack the CNs' DHCP relay names as option 82's circuit id: booter gives new CNs a NIC on NIC tag admin_rack_<rack> from NAPI's admin pool " +
      '(default: none, the relay sends its remote id and new CNs go on the admin network)',
  },
  {
    key: 'seed',
    flag: 'seed',
    env: 'MOCKCLOUD_SEED',
    help:
      'make random draws replayable: CN uuids, hostnames, serials, MACs, disk names and profiles drawn from a mix ' +
      '(and event targets and fault decisions) come from streams of this seed (any string; default: unpredictable)',
  },
  {
    key: 'timing',
    flag: 'timing',
    env: 'MOCKCLOUD_TIMING',
    help:
      'how long tasks, VM changes, CN boots and the dev headnode\'s jobs take: instant (as fast as the daemon runs them; default), ' +
      'smartos (as on a real SmartOS CN and Triton DC), or a timing file (YAML; see docs/timing.md)',
  },
  {
    key: 'profilesDir',
    flag: 'profiles-dir',
    env: 'MOCKCLOUD_PROFILES_DIR',
    help: 'a dir of hardware profile files (*.json, *.yaml, *.yml) added to the built-in profiles (default <data-dir>/profiles; see docs/fleet.md)',
  },
] as const;

export type SettingKey = (typeof SETTINGS)[number]['key'];
export type RawSettings = Partial<Record<SettingKey, string | number>>;

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
    if (!u || u.protocol !== 'tcp:' || !u.hostname || !u.port) throw invalid('fwapiFastUrl', `${JSON.stringify(fast)} is not tcp://HOST:PORT`);
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
  if (net.isIP(bindIp) === 0) throw invalid('bindIp', `bind IP ${JSON.stringify(bindIp)} is not an IP address`);
  // Each CN advertises this address to CNAPI as its `CN Agent IP`: it must be one CNAPI can reach.
  if (/^(0\.0\.0\.0|::|0:0:0:0:0:0:0:0)$/.test(bindIp)) {
    throw invalid('bindIp', `bind IP ${bindIp} is a wildcard; each mock CN advertises it to CNAPI as its CN Agent IP, so give the zone's admin IP`);
  }

  const portRangeText = await lookup('portRange');
  const controlPortText = await lookup('controlPort');
  const cmonPortText = await lookup('cmonPort');
  const headnodePortsText = await lookup('headnodePorts');
  const agentIps = parseAgentIpMode((await lookup('agentIps')) ?? ((sources.agentIps = 'default'), 'shared'));
  const adminUuid = (await lookup('adminUuid', 'ufdsAdmin')) ?? ((sources.adminUuid = 'default'), DEFAULT_ADMIN_UUID);
  if (!isUuid(adminUuid)) throw invalid('adminUuid', `admin uuid ${JSON.stringify(adminUuid)} is not a UUID`);
  const platform = (await lookup('platform')) ?? ((sources.platform = 'default'), hostPlatform());
  const allowExecuteText = await lookup('allowExecute');
  const bootSecondsText = await lookup('bootSeconds');
  const externalNicsText = await lookup('externalNics');
  const externalNics = externalNicsText === undefined ? undefined : parseBoolean('externalNics', externalNicsText);
  const logFile = await lookup('logFile');
  const logLevel = await lookup('logLevel');
  if (logLevel !== undefined && !['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(logLevel)) {
    throw invalid('logLevel', `log level ${JSON.stringify(logLevel)} is not one of trace, debug, info, warn, error, fatal`);
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(datacenterName)) {
    throw invalid('datacenterName', `datacenter name ${JSON.stringify(datacenterName)} is not a DNS label`);
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
    if (typeof ui === 'string') throw invalid('uiAddress', `fleet page address ${ui}`);
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
    if (!/^[A-Za-z0-9_-]{1,20}$/.test(bootRack)) throw invalid('bootRack', `rack ${JSON.stringify(bootRack)} must be 1-20 letters, digits, '_' or '-' (booter makes it the NIC tag admin_rack_<rack>)`);
    config.bootRack = bootRack;
  }
  const seed = await lookup('seed');
  if (seed !== undefined) {
    if (seed.length > 256) throw invalid('seed', 'a seed is at most 256 characters');
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
      throw invalid('timing', (err as Error).message);
    }
    config.timing = timing;
  }
  const metricsAddress = await lookup('metricsAddress', 'mockcloudMetricsAddress');
  if (metricsAddress !== undefined) config.metricsAddress = parseListenAddressSetting('metricsAddress', metricsAddress, DEFAULT_METRICS_PORT);
  for (const key of ['maxTasks', 'maxTasksPerServer', 'maxQueuedTasks', 'maxConnections'] as const) {
    const text = await lookup(key);
    if (text !== undefined) config[key] = parseCount(key, text, key === 'maxQueuedTasks');
  }
  return config;
}

/** "IP:PORT" of booter's dhcpd, or none/false/off. */
function parseBooter(text: string): { ip: string; port: number } | 'none' {
  if (['none', 'false', 'off', 'no'].includes(text.trim().toLowerCase())) return 'none';
  const a = parseListenAddress(text, 67);
  if (typeof a === 'string') throw invalid('booter', `booter address ${a}`);
  if (a.port === 0) throw invalid('booter', `booter address ${JSON.stringify(text)} needs a port (1-65535)`);
  // DHCP goes to booter alone, by unicast: never a wildcard, broadcast or multicast address.
  const first = Number(a.ip.split('.')[0]);
  if (/^(0\.0\.0\.0|255\.255\.255\.255|::)$/.test(a.ip) || (net.isIPv4(a.ip) && first >= 224) || /^ff/i.test(a.ip)) {
    throw invalid('booter', `booter address ${a.ip} is not one host's unicast address`);
  }
  return { ip: a.ip, port: a.port };
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
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
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

function invalid(key: string, message: string): MockcloudError {
  const s = SETTINGS.find((x) => x.key === key);
  return new MockcloudError('InvalidArgument', s ? `${message} (--${s.flag} / ${s.env})` : message);
}

function validateUrl(key: SettingKey, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(key, `${JSON.stringify(url)} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw invalid(key, `${JSON.stringify(url)} is not an http(s) URL`);
  }
  return url.replace(/\/+$/, '');
}

function parsePort(key: SettingKey, text: string, zeroOk: boolean): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isInteger(n) || n > 65535 || (!zeroOk && n === 0)) {
    throw invalid(key, `${JSON.stringify(text)} is not a port number${zeroOk ? ' (0-65535)' : ' (1-65535)'}`);
  }
  return n;
}

/** "IP", "IP:PORT" or "[IPv6]:PORT"; a bare IP takes `defaultPort`. */
export function parseListenAddressSetting(key: SettingKey, text: string, defaultPort: number): ListenAddress {
  const a = parseListenAddress(text, defaultPort);
  if (typeof a === 'string') throw invalid(key, a);
  return a;
}

function parseCount(key: SettingKey, text: string, zeroOk: boolean): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(n) || (!zeroOk && n === 0)) {
    throw invalid(key, `${JSON.stringify(text)} is not a whole number${zeroOk ? '' : ' > 0'}`);
  }
  return n;
}

function parseAgentIpMode(text: string): AgentIpMode {
  const mode = text.trim().toLowerCase();
  if (!(AGENT_IP_MODES as readonly string[]).includes(mode)) {
    throw invalid('agentIps', `agent IP mode ${JSON.stringify(text)} is not one of ${AGENT_IP_MODES.join(', ')}`);
  }
  // Only Linux routes all of 127/8 to the loopback interface without configuring aliases.
  if (mode === 'loopback' && process.platform !== 'linux') {
    throw invalid('agentIps', `agent IP mode 'loopback' needs Linux (all of 127/8 local); this is ${process.platform}`);
  }
  return mode as AgentIpMode;
}

function parseBoolean(key: SettingKey, text: string): boolean {
  const v = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw invalid(key, `${JSON.stringify(text)} is not a boolean (true or false)`);
}

/** Seconds, fractions allowed (tests boot in a fraction of a second), at most a day. */
function parseSeconds(key: SettingKey, text: string): number {
  const n = /^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(n) || n > 86_400) throw invalid(key, `${JSON.stringify(text)} is not a number of seconds (0-86400)`);
  return n;
}

/** The dev headnode's ports, in the order `--headnode-ports` takes them (FWAPI's two pinned from a base or when given). */
export interface HeadnodePortSet {
  cnapi: number;
  vmapi: number;
  napi: number;
  imgapi: number;
  sapi: number;
  fwapi?: number;
  /** FWAPI's update stream. */
  fwapiFast?: number;
}

const HEADNODE_PORT_ORDER = ['cnapi', 'vmapi', 'napi', 'imgapi', 'sapi', 'fwapi', 'fwapiFast'] as const;
const LISTED = 'five ports CNAPI,VMAPI,NAPI,IMGAPI,SAPI or seven (and FWAPI,FWAPI-UPDATES)';

/** "N" (N to N+6) or "C,V,N,I,S[,F,U]": five or seven different ports, none 0. */
export function parseHeadnodePorts(text: string): HeadnodePortSet {
  const all = HEADNODE_PORT_ORDER.length;
  const parts = text.split(',').map((p) => p.trim());
  let ports: number[];
  if (parts.length === 1) {
    const base = parsePort('headnodePorts', parts[0]!, false);
    if (base > 65535 - (all - 1)) {
      throw invalid('headnodePorts', `base port ${base} leaves no room for ${all} ports (at most ${65535 - (all - 1)})`);
    }
    ports = HEADNODE_PORT_ORDER.map((_, i) => base + i);
  } else if (parts.length === 5 || parts.length === all) {
    ports = parts.map((p) => parsePort('headnodePorts', p, false));
    if (new Set(ports).size !== ports.length) throw invalid('headnodePorts', `headnode ports ${JSON.stringify(text)} must be ${ports.length} different ports`);
  } else {
    throw invalid('headnodePorts', `headnode ports ${JSON.stringify(text)} must be a base port or ${LISTED}`);
  }
  const set: HeadnodePortSet = { cnapi: ports[0]!, vmapi: ports[1]!, napi: ports[2]!, imgapi: ports[3]!, sapi: ports[4]! };
  if (ports.length === all) {
    set.fwapi = ports[5]!;
    set.fwapiFast = ports[6]!;
  }
  return set;
}

export function parsePortRange(text: string): [number, number] {
  const m = /^\s*(\d+)\s*[-:]\s*(\d+)\s*$/.exec(text);
  if (!m) throw invalid('portRange', `port range ${JSON.stringify(text)} is not LO-HI`);
  const lo = parsePort('portRange', m[1]!, false);
  const hi = parsePort('portRange', m[2]!, false);
  if (lo > hi) throw invalid('portRange', `port range ${text}: ${lo} is above ${hi}`);
  return [lo, hi];
}

const TIMING_KEYS = ['heartbeatIntervalMs', 'statusIntervalMs', 'statusThrottleMs', 'requestTimeoutMs', 'startSpreadMs'] as const;

function validateTimings(value: unknown): Partial<ReporterTimings> {
  if (typeof value !== 'object' || value === null) throw new MockcloudError('InvalidArgument', 'config "timings" must be an object');
  const out: Partial<ReporterTimings> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'sysinfoBackoff') {
      const b = v as Record<string, unknown>;
      const backoff: Record<string, number> = {};
      for (const bk of ['minMs', 'maxMs', 'factor', 'jitter']) {
        if (b?.[bk] === undefined) continue;
        if (typeof b[bk] !== 'number' || !(b[bk] >= 0)) throw new MockcloudError('InvalidArgument', `config "timings.sysinfoBackoff.${bk}" must be a number ≥ 0`);
        backoff[bk] = b[bk];
      }
      out.sysinfoBackoff = backoff as unknown as ReporterTimings['sysinfoBackoff'];
      continue;
    }
    if (!(TIMING_KEYS as readonly string[]).includes(k)) {
      throw new MockcloudError('InvalidArgument', `config "timings.${k}" is unknown; known: ${TIMING_KEYS.join(', ')}, sysinfoBackoff`);
    }
    if (typeof v !== 'number' || !(v > 0)) throw new MockcloudError('InvalidArgument', `config "timings.${k}" must be a number > 0`);
    (out as Record<string, number>)[k] = v;
  }
  return out;
}
