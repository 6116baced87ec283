/**
 * The agents directory of a mock CN, `agents/<name>/{package.json,image_uuid,instance_uuid}`,
 * read the way the original dummy backend did (cn-agent-spec §4.4).
 *
 * A new CN has no agents directory: until an agents task changes them, its agents are the ten
 * a Triton CN runs (BUILTIN_AGENTS), with instance uuids derived from the server's uuid (so they
 * are stable without being stored, and the same in SAPI after every restart). The first
 * agent_install or agents_uninstall writes them out. Why: the small files per CN were most of
 * the cost of creating a CN (file creation is the expensive part of the disk work), and 10,000
 * CNs would carry 400,000 such inodes.
 */
import { createHash } from 'node:crypto';
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import { createFileSynced, fsyncDir } from '../common/durable-file.js';
import { isUuid } from '../common/uuid.js';
import type { AgentRecord } from './types.js';

export interface BuiltinAgent {
  name: string;
  version: string;
  description: string;
  /** The "image" this agent version came from: fixed per version, like an agentsshar build. */
  imageUuid: string;
}

/**
 * The agents every new mock CN gets: the set a Triton CN runs out of /opt/smartdc/agents (what
 * the agentsshar installs, less agents_core, which is apm's tooling rather than an agent).
 * cn-agent must be ≥ 2.15.0 so CNAPI's version gates (agents_uninstall ≥ 2.8.0,
 * server_sysinfo ≥ 2.10.0, server_reboot ≥ 2.11.0) pass. Each version has its own image uuid,
 * fixed like an agentsshar build's, which the dev headnode's IMGAPI serves.
 */
export const BUILTIN_AGENTS: readonly BuiltinAgent[] = [
  {
    name: 'cn-agent',
    version: '2.15.0',
    description: 'Triton Compute Node Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a01',
  },
  {
    name: 'vm-agent',
    version: '1.9.1',
    description: 'SmartDC VM Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a02',
  },
  {
    name: 'net-agent',
    version: '2.3.4',
    description: 'SmartDC Net Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a03',
  },
  {
    name: 'cmon-agent',
    version: '1.9.0',
    description: 'Triton Container Monitor Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a04',
  },
  {
    name: 'config-agent',
    version: '1.7.2',
    description: 'SmartDC Config Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a05',
  },
  {
    name: 'amon-agent',
    version: '1.0.1',
    description: 'SmartDC Monitoring Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a06',
  },
  {
    name: 'amon-relay',
    version: '1.0.1',
    description: 'SmartDC Monitoring Relay (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a07',
  },
  {
    name: 'firewaller',
    version: '1.6.3',
    description: 'SmartDataCenter Firewalling Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a08',
  },
  {
    name: 'smartlogin',
    version: '0.2.3',
    description: 'Joyent Zone User Authentication Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a09',
  },
  {
    name: 'hagfish-watcher',
    version: '1.0.1',
    description: 'SmartDataCenter Usage Watcher Agent (mockcloud)',
    imageUuid: '8e1e3f0c-5c1f-4b0a-9d1e-6f6a0c2b1a0a',
  },
];

const AGENT_FILE_NAMES = ['package.json', 'image_uuid', 'instance_uuid'] as const;

/** A stable instance uuid for a built-in agent of one CN (name-based, RFC 4122 version 5 layout). */
export function builtinInstanceUuid(serverUuid: string, agentName: string): string {
  const h = createHash('sha1').update(`mockcloud-agent:${serverUuid.toLowerCase()}:${agentName}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  // One flat string: a template of slices would stay a tree of cons and sliced strings, ~400
  // bytes per uuid held by every CN for each of its agents.
  return h.subarray(0, 16).toString('hex').replace(UUID_GROUPS, '$1-$2-$3-$4-$5');
}

const UUID_GROUPS = /^(.{8})(.{4})(.{4})(.{4})(.{12})$/;

/** What a CN without an agents directory reports. */
export function builtinAgentRecords(serverUuid: string): AgentRecord[] {
  return BUILTIN_AGENTS.map((a) => ({ name: a.name, version: a.version, image_uuid: a.imageUuid, uuid: builtinInstanceUuid(serverUuid, a.name) }))
    .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
}

function builtinAgentFileContent(a: BuiltinAgent, file: (typeof AGENT_FILE_NAMES)[number], serverUuid: string): string {
  if (file === 'package.json') {
    return `${JSON.stringify({ name: a.name, description: a.description, version: a.version, private: true }, null, 2)}\n`;
  }
  return `${file === 'image_uuid' ? a.imageUuid : builtinInstanceUuid(serverUuid, a.name)}\n`;
}

/**
 * Before an agents task changes anything: give a CN that still has the implicit built-in agents
 * a real agents directory holding them. Built in a hidden staging dir, synced and renamed into
 * place, so a crash leaves either no directory (still the built-ins) or a complete one.
 */
export async function materializeAgentsDir(agentsDir: string, serverUuid: string): Promise<boolean> {
  if (fs.existsSync(agentsDir)) return false;
  const parent = path.dirname(agentsDir);
  const staging = path.join(parent, `.agents.${process.pid}.${Date.now()}.tmp`);
  await fsp.rm(staging, { recursive: true, force: true });
  try {
    for (const a of BUILTIN_AGENTS) {
      const dir = path.join(staging, a.name);
      await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
      for (const f of AGENT_FILE_NAMES) await createFileSynced(path.join(dir, f), builtinAgentFileContent(a, f, serverUuid));
      await fsyncDir(dir);
    }
    await fsyncDir(staging);
    await fsp.rename(staging, agentsDir);
  } catch (err) {
    await fsp.rm(staging, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
  await fsyncDir(parent);
  return true;
}

/**
 * The agents list for CNAPI: one entry per subdirectory, in directory order (sorted, for a
 * stable answer), name from package.json else the dir name, version when known, image_uuid and
 * uuid (instance) when their files hold a UUID. A missing agents dir is the built-in agents
 * (see above); an unreadable entry is skipped, never fatal.
 */
export async function readAgents(agentsDir: string, serverUuid: string): Promise<AgentRecord[]> {
  let names: string[];
  try {
    names = fs.readdirSync(agentsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name)
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return builtinAgentRecords(serverUuid);
    throw err;
  }
  return names.map((n) => readAgent(path.join(agentsDir, n), n));
}

// Synchronous reads: a dozen tiny files per CN, read for each of 10,000 CNs at start.
function readAgent(dir: string, dirName: string): AgentRecord {
  const pkgText = readOptional(path.join(dir, 'package.json'));
  const image = readOptional(path.join(dir, 'image_uuid'));
  const instance = readOptional(path.join(dir, 'instance_uuid'));
  let name = dirName;
  let version: string | undefined;
  if (pkgText !== undefined) {
    try {
      const pkg = JSON.parse(pkgText) as { name?: unknown; version?: unknown };
      if (typeof pkg.name === 'string' && pkg.name) name = pkg.name;
      if (typeof pkg.version === 'string' && pkg.version) version = pkg.version;
    } catch {
      // An unparseable package.json leaves the dir name and no version, like a missing one.
    }
  }
  const record: AgentRecord = { name };
  if (version !== undefined) record.version = version;
  const imageUuid = image?.trim();
  if (isUuid(imageUuid)) record.image_uuid = imageUuid;
  const instanceUuid = instance?.trim();
  if (isUuid(instanceUuid)) record.uuid = instanceUuid;
  return record;
}

function readOptional(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
