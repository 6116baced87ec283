/**
 * The on-disk layout of mock CNs, exactly the original mockcloud's so an existing data dir is
 * adopted as is:
 *
 *   <data-dir>/servers/<uuid>/sysinfo.json
 *   <data-dir>/servers/<uuid>/agents/<name>/{package.json,image_uuid,instance_uuid}
 *   <data-dir>/servers/<uuid>/vms/<vm uuid>.json
 *   <data-dir>/servers/<uuid>/logs/cn-agent/<timestamp>-<task>.log   (the original's; mockcloud
 *                       writes task logs to <data-dir>/logs/cn-agent-tasks.log instead)
 *   <data-dir>/servers/<uuid>/zfs.json   (mockcloud's: what cn-agent's ZFS write tasks changed,
 *                       written on the first such task)
 *
 * A CN mockcloud creates starts with sysinfo.json and an empty vms/: agents/ is implicit until
 * an agents task writes it (agents-dir.ts); a data dir without vms/ gets it when the VM store opens.
 *
 * mockcloud adds two kinds of hidden entries beside the server dirs (a leading dot, so the
 * original's tools, which only read uuid-named entries, never see them):
 *
 *   .creating-<uuid>/   a server being created; renamed to <uuid>/ once complete, so a crash
 *                       never leaves a half-made server that looks real;
 *   .deleting-<uuid>/   a server being removed: renamed away first (it is no CN any more), kept
 *                       until its NICs, VMs and record are gone from NAPI, VMAPI and CNAPI, so
 *                       a removal cut short is finished by the next start.
 */
import path from 'node:path';
import { isUuid } from '../common/uuid.js';
import type { ServerPaths } from './types.js';

export const SERVERS_DIR = 'servers';
export const SYSINFO_FILE = 'sysinfo.json';
export const CREATING_PREFIX = '.creating-';
export const DELETING_PREFIX = '.deleting-';
/** Inside a `.creating-<uuid>/` dir: what the creation allocated outside (NAPI NICs). */
export const CREATE_MARKER_FILE = 'create.json';

export function serversDir(dataDir: string): string {
  return path.join(dataDir, SERVERS_DIR);
}

/** Paths of one server; `uuid` must already be validated (it becomes a path component). */
export function serverPaths(dataDir: string, uuid: string): ServerPaths {
  if (!isUuid(uuid)) throw new Error(`not a server uuid: ${JSON.stringify(uuid)}`);
  return pathsUnder(path.join(serversDir(dataDir), uuid));
}

export function pathsUnder(dir: string): ServerPaths {
  return {
    dir,
    sysinfo: path.join(dir, SYSINFO_FILE),
    vms: path.join(dir, 'vms'),
    agents: path.join(dir, 'agents'),
    taskLogs: path.join(dir, 'logs', 'cn-agent'),
  };
}

export function creatingDir(dataDir: string, uuid: string): string {
  return path.join(serversDir(dataDir), `${CREATING_PREFIX}${uuid}`);
}

export function deletingDir(dataDir: string, uuid: string): string {
  return path.join(serversDir(dataDir), `${DELETING_PREFIX}${uuid}`);
}

export type ServerEntryKind = 'server' | 'creating' | 'deleting' | 'other';

/** What a name found in `<data-dir>/servers/` is. */
export function classifyServerEntry(name: string): { kind: ServerEntryKind; uuid?: string } {
  if (isUuid(name as unknown)) return { kind: 'server', uuid: name };
  for (const [prefix, kind] of [
    [CREATING_PREFIX, 'creating'],
    [DELETING_PREFIX, 'deleting'],
  ] as const) {
    if (name.startsWith(prefix) && isUuid(name.slice(prefix.length))) {
      return { kind, uuid: name.slice(prefix.length) };
    }
  }
  return { kind: 'other' };
}
