/**
 * The on-disk form of one VM: `<root>/servers/<server_uuid>/vms/<vm_uuid>.json`, pretty
 * JSON (2-space indent) plus a trailing newline, exactly as node-vmadm's dummy writes it.
 */
import path from 'node:path';
import { isUuid } from '../common/uuid.js';
import { isPlainObject } from './validate.js';

/** A file is a VM when its whole name is `<hex-and-dashes>.json` (the dummy's rule). */
const VM_FILE_RE = /^([a-f0-9-]+)\.json$/;

export function serverDir(root: string, serverUuid: string): string {
  return path.join(root, 'servers', serverUuid);
}

export function vmsDir(root: string, serverUuid: string): string {
  return path.join(serverDir(root, serverUuid), 'vms');
}

export function vmFile(dir: string, uuid: string): string {
  return path.join(dir, `${uuid}.json`);
}

/** The VM uuid a directory entry names, or undefined for anything else (temp files...). */
export function vmUuidOfFile(name: string): string | undefined {
  const m = VM_FILE_RE.exec(name);
  return m ? m[1] : undefined;
}

export function serializeVm(stored: Record<string, unknown>): string {
  return `${JSON.stringify(stored, null, 2)}\n`;
}

export class VmFileError extends Error {}

/**
 * Parse a VM file. The object must be a JSON object whose `uuid` (when present) matches
 * the file name; a missing uuid is taken from the name, a missing brand is vmadm's
 * default `joyent`.
 */
export function parseVmFile(text: string, fileUuid: string): Record<string, unknown> {
  if (text.trim() === '') throw new VmFileError('empty file');
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (err) {
    throw new VmFileError(`not JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(obj)) throw new VmFileError('not a JSON object');
  if (!isUuid(fileUuid)) throw new VmFileError('file name is not a UUID');
  if (obj.uuid === undefined) obj.uuid = fileUuid;
  if (obj.uuid !== fileUuid) throw new VmFileError(`uuid ${JSON.stringify(obj.uuid)} does not match the file name`);
  if (obj.brand === undefined) obj.brand = 'joyent';
  if (typeof obj.brand !== 'string') throw new VmFileError('brand is not a string');
  if (obj.state !== undefined && typeof obj.state !== 'string') throw new VmFileError('state is not a string');
  if (obj.nics !== undefined && !(Array.isArray(obj.nics) && obj.nics.every(isPlainObject))) {
    throw new VmFileError('nics is not an array of objects');
  }
  if (obj.disks !== undefined && !(Array.isArray(obj.disks) && obj.disks.every(isPlainObject))) {
    throw new VmFileError('disks is not an array of objects');
  }
  return obj;
}
