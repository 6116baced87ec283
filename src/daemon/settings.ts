/**
 * The daemon's settings: one row per setting (its flag, environment variable and config file
 * key), and how a setting's text becomes its value, refused with a message that names where it
 * was set. config.ts looks each setting up in its sources and builds the DaemonConfig.
 */
import net from 'node:net';
import { MockcloudError } from '../common/errors.js';
import { parseListenAddress, type ListenAddress } from '../common/listen-address.js';
import type { ReporterTimings } from '../agents/cn-agent/cnapi-reporter/timings.js';

/** The port Triton's services serve `/metrics` on (node-triton-metrics); --metrics-address without one. */
export const DEFAULT_METRICS_PORT = 8881;

/**
 * How the mock CNs get their `CN Agent IP`:
 *   shared     every CN's cn-agent socket binds the bind IP (one address, one port per CN);
 *   loopback   (Linux) every CN gets its own 127.x.y.z address (agent-ips.ts), so CMON's
 *              `http://<CN Agent IP>:9163/v1/gz/metrics` reaches exactly that CN.
 */
export type AgentIpMode = 'shared' | 'loopback';
export const AGENT_IP_MODES: readonly AgentIpMode[] = ['shared', 'loopback'];

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
      'SAPI N+4, FWAPI N+5, its update stream N+6, PAPI N+7) or five ports CNAPI,VMAPI,NAPI,IMGAPI,SAPI (FWAPI and PAPI on any ' +
      'free ones) or seven CNAPI,VMAPI,NAPI,IMGAPI,SAPI,FWAPI,FWAPI-UPDATES (PAPI on a free one) or eight (and PAPI) ' +
      '(default: any free ports)',
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
    help:
      "open connections across all CNs' cn-agent sockets (default 6144, or more where `ulimit -n` leaves room: the limit less " +
      'one per CN and 4096); at the cap the oldest idle ones (no full request yet) are closed to make room, and a sixteenth of it is kept for requests',
  },
  {
    key: 'maxConnectionsPerServer',
    flag: 'max-connections-per-server',
    env: 'MOCKCLOUD_MAX_CONNECTIONS_PER_SERVER',
    help: "open connections to one CN's cn-agent socket (default a quarter of --max-connections); beyond it that CN's oldest idle ones are closed",
  },
  {
    key: 'maxControlConnections',
    flag: 'max-control-connections',
    env: 'MOCKCLOUD_MAX_CONTROL_CONNECTIONS',
    help: 'open connections to the control API (default 1024; a sixteenth kept for requests such as the CLI\'s); at the cap the oldest idle ones are closed',
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
    key: 'mainThreadNice',
    flag: 'main-thread-nice',
    env: 'MOCKCLOUD_MAIN_THREAD_NICE',
    help:
      "Linux: how many nice levels below the heartbeat thread the daemon's other threads (tasks, APIs, agents, V8's and libuv's " +
      'helpers) run, so that a host short of CPU delays tasks before heartbeats (0-19; default 0, the same; docs/timing.md measured 10)',
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

/** A setting's value refused, naming the flag and environment variable that set it. */
export function invalidSetting(key: string, message: string): MockcloudError {
  const s = SETTINGS.find((x) => x.key === key);
  return new MockcloudError('InvalidArgument', s ? `${message} (--${s.flag} / ${s.env})` : message);
}

export function validateUrl(key: SettingKey, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidSetting(key, `${JSON.stringify(url)} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw invalidSetting(key, `${JSON.stringify(url)} is not an http(s) URL`);
  }
  return url.replace(/\/+$/, '');
}

export function parsePort(key: SettingKey, text: string, zeroOk: boolean): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isInteger(n) || n > 65535 || (!zeroOk && n === 0)) {
    throw invalidSetting(key, `${JSON.stringify(text)} is not a port number${zeroOk ? ' (0-65535)' : ' (1-65535)'}`);
  }
  return n;
}

/** "IP", "IP:PORT" or "[IPv6]:PORT"; a bare IP takes `defaultPort`. */
export function parseListenAddressSetting(key: SettingKey, text: string, defaultPort: number): ListenAddress {
  const a = parseListenAddress(text, defaultPort);
  if (typeof a === 'string') throw invalidSetting(key, a);
  return a;
}

export function parseCount(key: SettingKey, text: string, zeroOk: boolean): number {
  const n = /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isSafeInteger(n) || (!zeroOk && n === 0)) {
    throw invalidSetting(key, `${JSON.stringify(text)} is not a whole number${zeroOk ? '' : ' > 0'}`);
  }
  return n;
}

export function parseAgentIpMode(text: string): AgentIpMode {
  const mode = text.trim().toLowerCase();
  if (!(AGENT_IP_MODES as readonly string[]).includes(mode)) {
    throw invalidSetting('agentIps', `agent IP mode ${JSON.stringify(text)} is not one of ${AGENT_IP_MODES.join(', ')}`);
  }
  // Only Linux routes all of 127/8 to the loopback interface without configuring aliases.
  if (mode === 'loopback' && process.platform !== 'linux') {
    throw invalidSetting('agentIps', `agent IP mode 'loopback' needs Linux (all of 127/8 local); this is ${process.platform}`);
  }
  return mode as AgentIpMode;
}

export function parseBoolean(key: SettingKey, text: string): boolean {
  const v = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw invalidSetting(key, `${JSON.stringify(text)} is not a boolean (true or false)`);
}

/** Seconds, fractions allowed (tests boot in a fraction of a second), at most a day. */
export function parseSeconds(key: SettingKey, text: string): number {
  const n = /^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(n) || n > 86_400) throw invalidSetting(key, `${JSON.stringify(text)} is not a number of seconds (0-86400)`);
  return n;
}

/** The dev headnode's ports, in the order `--headnode-ports` takes them (FWAPI's two and PAPI's pinned from a base or when given). */
export interface HeadnodePortSet {
  cnapi: number;
  vmapi: number;
  napi: number;
  imgapi: number;
  sapi: number;
  fwapi?: number;
  /** FWAPI's update stream. */
  fwapiFast?: number;
  papi?: number;
}

const HEADNODE_PORT_ORDER = ['cnapi', 'vmapi', 'napi', 'imgapi', 'sapi', 'fwapi', 'fwapiFast', 'papi'] as const;
const LISTED = 'five ports CNAPI,VMAPI,NAPI,IMGAPI,SAPI, seven (and FWAPI,FWAPI-UPDATES) or eight (and PAPI)';

/** "N" (N to N+7) or "C,V,N,I,S[,F,U[,P]]": five, seven or eight different ports, none 0. */
export function parseHeadnodePorts(text: string): HeadnodePortSet {
  const all = HEADNODE_PORT_ORDER.length;
  const parts = text.split(',').map((p) => p.trim());
  let ports: number[];
  if (parts.length === 1) {
    const base = parsePort('headnodePorts', parts[0]!, false);
    if (base > 65535 - (all - 1)) {
      throw invalidSetting('headnodePorts', `base port ${base} leaves no room for ${all} ports (at most ${65535 - (all - 1)})`);
    }
    ports = HEADNODE_PORT_ORDER.map((_, i) => base + i);
  } else if (parts.length === 5 || parts.length === 7 || parts.length === all) {
    ports = parts.map((p) => parsePort('headnodePorts', p, false));
    if (new Set(ports).size !== ports.length) throw invalidSetting('headnodePorts', `headnode ports ${JSON.stringify(text)} must be ${ports.length} different ports`);
  } else {
    throw invalidSetting('headnodePorts', `headnode ports ${JSON.stringify(text)} must be a base port or ${LISTED}`);
  }
  const set: HeadnodePortSet = { cnapi: ports[0]!, vmapi: ports[1]!, napi: ports[2]!, imgapi: ports[3]!, sapi: ports[4]! };
  if (ports.length >= 7) {
    set.fwapi = ports[5]!;
    set.fwapiFast = ports[6]!;
  }
  if (ports.length === all) set.papi = ports[7]!;
  return set;
}

export function parsePortRange(text: string): [number, number] {
  const m = /^\s*(\d+)\s*[-:]\s*(\d+)\s*$/.exec(text);
  if (!m) throw invalidSetting('portRange', `port range ${JSON.stringify(text)} is not LO-HI`);
  const lo = parsePort('portRange', m[1]!, false);
  const hi = parsePort('portRange', m[2]!, false);
  if (lo > hi) throw invalidSetting('portRange', `port range ${text}: ${lo} is above ${hi}`);
  return [lo, hi];
}

const TIMING_KEYS = ['heartbeatIntervalMs', 'statusIntervalMs', 'statusThrottleMs', 'requestTimeoutMs', 'startSpreadMs'] as const;

export function validateTimings(value: unknown): Partial<ReporterTimings> {
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

/** "IP:PORT" of booter's dhcpd, or none/false/off. */
export function parseBooter(text: string): { ip: string; port: number } | 'none' {
  if (['none', 'false', 'off', 'no'].includes(text.trim().toLowerCase())) return 'none';
  const a = parseListenAddress(text, 67);
  if (typeof a === 'string') throw invalidSetting('booter', `booter address ${a}`);
  if (a.port === 0) throw invalidSetting('booter', `booter address ${JSON.stringify(text)} needs a port (1-65535)`);
  // DHCP goes to booter alone, by unicast: never a wildcard, broadcast or multicast address.
  const first = Number(a.ip.split('.')[0]);
  if (/^(0\.0\.0\.0|255\.255\.255\.255|::)$/.test(a.ip) || (net.isIPv4(a.ip) && first >= 224) || /^ff/i.test(a.ip)) {
    throw invalidSetting('booter', `booter address ${a.ip} is not one host's unicast address`);
  }
  return { ip: a.ip, port: a.port };
}
