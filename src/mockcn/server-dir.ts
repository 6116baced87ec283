/**
 * Creating, finding and removing server directories, durably.
 *
 * Creation is staged: `servers/.creating-<uuid>/` first holds `create.json` (what was
 * allocated outside, e.g. the admin NIC's MAC in NAPI, so a crash can be cleaned up), then
 * every file of the server; everything is fsynced and the dir is renamed to `servers/<uuid>/`
 * in one step. A server dir named by a UUID is therefore always complete; a crash leaves only
 * a `.creating-` dir, which the daemon finds at start (`scanServers`) and cleans up.
 *
 * Removal is staged too: the dir is renamed to `servers/.deleting-<uuid>/` first, and deleted
 * only once the server's records outside (NAPI, VMAPI, CNAPI) are gone; a `.deleting-` dir
 * found at start is a clean-up to finish.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { createFileSynced, fsyncDir } from '../common/durable-file.js';
import { MockcloudError } from '../common/errors.js';
import type { Sysinfo } from '../common/sysinfo.js';
import {
  classifyServerEntry,
  CREATE_MARKER_FILE,
  creatingDir,
  deletingDir,
  serverPaths,
  serversDir,
  SYSINFO_FILE,
} from './layout.js';
import { serializeNewSysinfo } from './sysinfo-template.js';
import { needsProfileRecord, PROFILE_FILE, serializeProfileRecord, type ProfileRecord } from './profile-record.js';

/** What `create.json` records while a server is being created. */
export interface CreateMarker {
  uuid: string;
  startedAt: string;
  /** MACs of NICs this creation may have allocated in NAPI (delete them when aborting). */
  napiMacs: string[];
}

/** Step 1: claim the uuid and record what is about to be allocated. */
export async function beginServerCreation(dataDir: string, marker: CreateMarker): Promise<void> {
  const root = serversDir(dataDir);
  await fsp.mkdir(root, { recursive: true });
  const staging = creatingDir(dataDir, marker.uuid);
  try {
    await fsp.mkdir(staging);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new MockcloudError('Conflict', `server ${marker.uuid} is already being created`);
    }
    throw err;
  }
  // The marker matters only when something outside must be undone after a crash; without it
  // an interrupted staging dir is simply removed at the next start.
  if (marker.napiMacs.length === 0) return;
  // Written in place (the dir is new: nobody reads it before it is whole). A marker cut short
  // by a crash names nothing: nothing was asked of NAPI before it was durable.
  await createFileSynced(path.join(staging, CREATE_MARKER_FILE), `${JSON.stringify(marker)}\n`);
  await Promise.all([fsyncDir(staging), fsyncDir(root)]);
}

/** Step 2: write sysinfo.json into the staging dir, durably, and publish the server under its uuid. */
export async function finishServerCreation(dataDir: string, sysinfo: Sysinfo, profile?: ProfileRecord): Promise<void> {
  const uuid = sysinfo.UUID;
  const staging = creatingDir(dataDir, uuid);
  const final = serverPaths(dataDir, uuid).dir;
  // The marker stays until the server is published: a crash anywhere before the rename must
  // still name the NAPI NICs to release. After the rename it is only a stale file.
  // Only sysinfo.json and an empty vms/: the agents directory is implicit until an agents
  // task writes it (agents-dir.ts), logs/ comes with the first task log.
  // vms/ too, so its entry is durable with the same fsync of the dir (the VM store would make
  // it, and sync the dir again, when the CN starts).
  await fsp.mkdir(path.join(staging, 'vms'));
  await createFileSynced(path.join(staging, SYSINFO_FILE), serializeNewSysinfo(sysinfo));
  if (profile && needsProfileRecord(profile, sysinfo)) {
    await createFileSynced(path.join(staging, PROFILE_FILE), serializeProfileRecord(profile));
  }
  await fsyncDir(staging);
  try {
    await fsp.rename(staging, final);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTEMPTY') {
      throw new MockcloudError('Conflict', `server ${uuid} already exists`);
    }
    throw err;
  }
  await fsyncDir(serversDir(dataDir));
  await fsp.rm(path.join(final, CREATE_MARKER_FILE), { force: true });
}

/** Give up a creation: remove its staging dir (NAPI cleanup is the caller's). */
export async function abortServerCreation(dataDir: string, uuid: string): Promise<void> {
  await fsp.rm(creatingDir(dataDir, uuid), { recursive: true, force: true });
}

export async function readCreateMarker(dataDir: string, uuid: string): Promise<CreateMarker | undefined> {
  try {
    const text = await fsp.readFile(path.join(creatingDir(dataDir, uuid), CREATE_MARKER_FILE), 'utf8');
    const value = JSON.parse(text) as CreateMarker;
    if (!Array.isArray(value.napiMacs)) return undefined;
    return { uuid, startedAt: String(value.startedAt), napiMacs: value.napiMacs.filter((m) => typeof m === 'string') };
  } catch {
    return undefined;
  }
}

/**
 * Step 1 of a removal: the server dir becomes `.deleting-<uuid>/` (one atomic, durable rename),
 * so it is no longer a server any start would load, and what its clean-up needs (sysinfo with
 * the admin NIC, the VM files) stays on disk until the clean-up is done. False when there is
 * no such server dir.
 */
export async function markServerDeleting(dataDir: string, uuid: string): Promise<boolean> {
  try {
    await fsp.rename(serverPaths(dataDir, uuid).dir, deletingDir(dataDir, uuid));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  await fsyncDir(serversDir(dataDir));
  return true;
}

/** Step 2, once nothing outside refers to the server any more: its files go. */
export async function finishServerRemoval(dataDir: string, uuid: string): Promise<void> {
  await fsp.rm(deletingDir(dataDir, uuid), { recursive: true, force: true });
}

/** Whether a removal of this server was begun and not finished. */
export async function isServerDeleting(dataDir: string, uuid: string): Promise<boolean> {
  try {
    return (await fsp.stat(deletingDir(dataDir, uuid))).isDirectory();
  } catch {
    return false;
  }
}

/** Remove a server's directory at once: renamed away first (atomic), then deleted. */
export async function removeServerDir(dataDir: string, uuid: string): Promise<void> {
  if (await markServerDeleting(dataDir, uuid)) await finishServerRemoval(dataDir, uuid);
}

export interface ServerScan {
  /** uuid-named dirs: servers (maybe broken; loading tells). */
  servers: string[];
  /** Interrupted creations. */
  creating: string[];
  /** Interrupted removals. */
  deleting: string[];
  /** Anything else in servers/ (ignored, reported). */
  other: string[];
}

export async function scanServers(dataDir: string): Promise<ServerScan> {
  const scan: ServerScan = { servers: [], creating: [], deleting: [], other: [] };
  let entries: string[];
  try {
    entries = await fsp.readdir(serversDir(dataDir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return scan;
    throw err;
  }
  for (const name of entries.sort()) {
    const { kind, uuid } = classifyServerEntry(name);
    if (kind === 'server') scan.servers.push(uuid!);
    else if (kind === 'creating') scan.creating.push(uuid!);
    else if (kind === 'deleting') scan.deleting.push(uuid!);
    else scan.other.push(name);
  }
  return scan;
}
