/**
 * The agents directory of a mock CN, `agents/<name>/{package.json,image_uuid,instance_uuid}`,
 * read the way the original dummy backend did (cn-agent-spec §4.4) and written for new CNs
 * with the four agents mockcloud runs on every CN.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isUuid, newUuid } from '../common/uuid.js';
import type { AgentRecord } from './types.js';

export interface BuiltinAgent {
  name: string;
  version: string;
  description: string;
  /** The "image" this agent version came from: fixed per version, like an agentsshar build. */
  imageUuid: string;
}

/**
 * The agents every new mock CN gets. cn-agent must be ≥ 2.15.0 so CNAPI's version gates
 * (agents_uninstall ≥ 2.8.0, server_sysinfo ≥ 2.10.0, server_reboot ≥ 2.11.0) pass.
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
];

export interface AgentFile {
  /** Relative to the server dir. */
  relPath: string;
  content: string;
}

/** The files of the built-in agents for a new server (instance uuids fresh per CN). */
export function builtinAgentFiles(): AgentFile[] {
  const files: AgentFile[] = [];
  for (const a of BUILTIN_AGENTS) {
    const dir = path.join('agents', a.name);
    const pkg = { name: a.name, description: a.description, version: a.version, private: true };
    files.push({ relPath: path.join(dir, 'package.json'), content: `${JSON.stringify(pkg, null, 2)}\n` });
    files.push({ relPath: path.join(dir, 'image_uuid'), content: `${a.imageUuid}\n` });
    files.push({ relPath: path.join(dir, 'instance_uuid'), content: `${newUuid()}\n` });
  }
  return files;
}

/**
 * The agents list for CNAPI: one entry per subdirectory, in directory order (sorted, for a
 * stable answer), name from package.json else the dir name, version when known, image_uuid and
 * uuid (instance) when their files hold a UUID. A missing agents dir is an empty list; an
 * unreadable entry is skipped, never fatal.
 */
export async function readAgents(agentsDir: string): Promise<AgentRecord[]> {
  let names: string[];
  try {
    names = (await fsp.readdir(agentsDir, { withFileTypes: true }))
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name)
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const records = await Promise.all(names.map((n) => readAgent(path.join(agentsDir, n), n)));
  return records;
}

async function readAgent(dir: string, dirName: string): Promise<AgentRecord> {
  const [pkgText, image, instance] = await Promise.all([
    readOptional(path.join(dir, 'package.json')),
    readOptional(path.join(dir, 'image_uuid')),
    readOptional(path.join(dir, 'instance_uuid')),
  ]);
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

async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}
