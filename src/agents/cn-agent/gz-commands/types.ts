/**
 * What the mock global-zone commands read: one JSON snapshot of the CN, written by
 * command_execute for one script run (gz-scripts/gz-snapshot.ts) and removed after it, and what
 * each command answers.
 */
import type { RemoteVm, RuleData } from '../../firewaller/rules.js';
import type { Dataset, Pool } from '../zfs/model.js';

export interface GzImage {
  manifest: Record<string, unknown>;
  zpool: string;
  source?: string;
}

/** A dataset of the snapshot: the model's fields and its properties as `zfs get -p` gives them. */
export type GzDataset = Dataset & { properties: Record<string, string> };

export interface GzSnapshot {
  /** sysinfo.json as `sysinfo` prints it (no run-time agent address). */
  sysinfo: Record<string, unknown>;
  /** Every VM as `vmadm get` prints it, do_not_inventory ones included. */
  vms: Record<string, unknown>[];
  /** The CN's ZFS view, each dataset with its `zfs get -p` values worked out by the task. */
  zfs: { pool: Pool; datasets: GzDataset[] };
  /** The installed images as `imgadm list -j` prints them. */
  images: GzImage[];
  /** The firewaller's store of the CN (fwadm's /var/fw); absent: empty. */
  firewall?: { rules: RuleData[]; rvms: RemoteVm[] };
}

export interface CommandResult {
  stdout: string;
  stderr: string;
  code: number;
}

export type GzCommand = (snapshot: GzSnapshot, args: string[]) => CommandResult;

export function ok(stdout: string): CommandResult {
  return { stdout, stderr: '', code: 0 };
}

export function fail(stderr: string, code = 1, stdout = ''): CommandResult {
  return { stdout, stderr: stderr.endsWith('\n') ? stderr : `${stderr}\n`, code };
}
