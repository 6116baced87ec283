/**
 * The file-backed vmadm for a fleet of mock CNs: one FileVmStore per server over
 * `<root>/servers/<server_uuid>/vms/*.json` (the original mockcloud layout).
 * See docs/vmadm.md for the on-disk format and semantics.
 */
import type { Logger } from '../common/log.js';
import type { SysinfoIdentity } from '../common/sysinfo.js';
import { isUuid } from '../common/uuid.js';
import { identityFromSysinfo } from './derived.js';
import { invalidValue } from './errors.js';
import { FileVmStore, type OpenReport } from './store.js';
import type { VmPacer, VmStore } from './types.js';
import { vmsDir } from './vm-file.js';

export interface VmadmOptions {
  /** The data dir: servers live in `<root>/servers/<uuid>/`. */
  root: string;
  log: Logger;
  /**
   * Watch each server's vms directory for hand edits (one inotify watch per server).
   * Off by default: 10,000 CNs must not cost 10,000 watches; use `rescan()` instead.
   */
  watch?: boolean;
  /** Clock in ms, for tests. */
  now?: () => number;
  /** Each server's pacer: how long its VMs' stages take (the daemon's timing). */
  pacerFor?: (serverUuid: string) => VmPacer | undefined;
}

export class Vmadm {
  private readonly root: string;
  private readonly log: Logger;
  private readonly watch: boolean;
  private readonly now: (() => number) | undefined;
  private readonly pacerFor: VmadmOptions['pacerFor'];
  private readonly stores = new Map<string, FileVmStore>();
  private readonly opening = new Map<string, Promise<FileVmStore>>();

  constructor(opts: VmadmOptions) {
    this.root = opts.root;
    this.log = opts.log;
    this.watch = opts.watch ?? false;
    this.now = opts.now;
    this.pacerFor = opts.pacerFor;
  }

  /**
   * Open a server's store, building its index from disk once. Unreadable VM files are
   * logged (warn) and skipped; temp files are ignored. Opening an open server returns
   * the same store.
   */
  async openServer(serverUuid: string, identity: SysinfoIdentity): Promise<VmStore> {
    if (!isUuid(serverUuid)) throw invalidValue('server_uuid', `not a UUID: ${JSON.stringify(serverUuid)}`);
    checkIdentity(identity);
    if (identity.UUID.toLowerCase() !== serverUuid.toLowerCase()) {
      throw invalidValue('sysinfo.UUID', `sysinfo UUID ${identity.UUID} is not server ${serverUuid}`);
    }
    const open = this.stores.get(serverUuid);
    if (open) return open;
    let pending = this.opening.get(serverUuid);
    if (!pending) {
      pending = this.doOpen(serverUuid, identity);
      this.opening.set(serverUuid, pending);
      pending.then(
        () => this.opening.delete(serverUuid),
        () => this.opening.delete(serverUuid),
      );
    }
    return pending;
  }

  private async doOpen(serverUuid: string, identity: SysinfoIdentity): Promise<FileVmStore> {
    const pacer = this.pacerFor?.(serverUuid);
    const { store, report } = await FileVmStore.open({
      ...(pacer ? { pacer } : {}),
      dir: vmsDir(this.root, serverUuid),
      serverUuid,
      identity: identityFromSysinfo(identity),
      log: this.log,
      watch: this.watch,
      ...(this.now ? { now: this.now } : {}),
    });
    this.logReport(serverUuid, report);
    this.stores.set(serverUuid, store);
    return store;
  }

  private logReport(serverUuid: string, report: OpenReport): void {
    const level = report.bad.length > 0 ? 'warn' : 'debug';
    this.log[level](
      { server: serverUuid, vms: report.loaded, unreadable: report.bad.length, tempsRemoved: report.tempsRemoved },
      'VM store opened',
    );
  }

  server(serverUuid: string): VmStore | undefined {
    return this.stores.get(serverUuid);
  }

  /** The open servers' uuids. */
  servers(): string[] {
    return [...this.stores.keys()];
  }

  /** Finish in-flight writes and forget the server (its files stay). */
  async closeServer(serverUuid: string): Promise<void> {
    const pending = this.opening.get(serverUuid);
    if (pending) await pending.catch(() => undefined);
    const store = this.stores.get(serverUuid);
    if (!store) return;
    this.stores.delete(serverUuid);
    await store.close();
  }

  async close(): Promise<void> {
    await Promise.all([...this.opening.values()].map((p) => p.catch(() => undefined)));
    const stores = [...this.stores.values()];
    this.stores.clear();
    await Promise.all(stores.map((s) => s.close()));
  }
}

function checkIdentity(identity: SysinfoIdentity): void {
  if (!identity || !isUuid(identity.UUID)) throw invalidValue('sysinfo.UUID', 'sysinfo UUID must be a UUID');
  for (const key of ['Datacenter Name', 'Live Image'] as const) {
    if (typeof identity[key] !== 'string') throw invalidValue(`sysinfo.${key}`, `sysinfo "${key}" must be a string`);
  }
}

export { FileVmStore } from './store.js';
export { isSnapshotNotFound } from './snapshots.js';
export { UPDATE_KEYS } from './update.js';
export { vmsDir, vmFile } from './vm-file.js';
export { DERIVED_FIELDS } from './derived.js';
export type * from './types.js';
