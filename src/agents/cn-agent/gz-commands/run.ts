/**
 * The mock global-zone commands by name (what a command_execute script finds first on its
 * PATH), each answering from the CN's snapshot like the SmartOS command of that name.
 */
import { fwadm } from './fwadm.js';
import { imgadm } from './imgadm.js';
import { sysinfo } from './sysinfo.js';
import type { CommandResult, GzCommand, GzSnapshot } from './types.js';
import { hostname, uname, zonename } from './uname.js';
import { vmadm } from './vmadm.js';
import { zfs, zpool } from './zfs.js';

export const GZ_COMMANDS: Readonly<Record<string, GzCommand>> = { sysinfo, vmadm, zfs, zpool, imgadm, fwadm, uname, hostname, zonename };

export function runGzCommand(snapshot: GzSnapshot, command: string, args: string[]): CommandResult {
  const fn = GZ_COMMANDS[command];
  if (!fn) return { stdout: '', stderr: `${command}: not found\n`, code: 127 };
  return fn(snapshot, args);
}
