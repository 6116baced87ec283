/**
 * One server's VMs: an in-memory index over `<root>/servers/<uuid>/vms/*.json`.
 *
 * - Reads (get/list/load/lookup) use the index only; the disk is read when the store
 *   opens and on `rescan()` (or, opt-in, when a directory watch fires).
 * - Writes for one VM run one at a time (KeyedQueue); different VMs run in parallel.
 *   Each write is durable (writeFileDurable) before the index changes; the index change
 *   and its event happen in the same synchronous step, and the call resolves after both
 *   (read-after-write).
 * - The index holds one deep-frozen loaded VM per uuid. get/list and events hand out
 *   those shared frozen objects; load/lookup return copies the caller may change.
 */
import fs, { promises as fsp } from 'node:fs';
import path from 'node:path';
import { MockcloudError } from '../common/errors.js';
import { isUuid } from '../common/uuid.js';
import { unlinkDurable, writeFileDurable } from '../common/durable-file.js';
import type { Logger } from '../common/log.js';
import { buildNewVm } from './create.js';
import { applyLoadDefaults, deepFreeze, toLoaded, toStored, zoneRunning, type VmIdentity } from './derived.js';
import { diffVms } from './diff.js';
import { VmDirWatch } from './dir-watch.js';
import { invalidValue, vmExists, vmNotFound } from './errors.js';
import { EventHub } from './events.js';
import { checkSysrq, vmInfo, type InfoOptions } from './info.js';
import { KeyedQueue } from './keyed-queue.js';
import {
  bootStep,
  checkDeletable,
  destroyPauseMs,
  isPause,
  provisionPlan,
  shuttingDownStep,
  checkKillable,
  checkReprovisionable,
  haltStep,
  hostHaltSteps,
  killSteps,
  crashSteps,
  parseSignal,
  rebootPlan,
  reprovisionSteps,
  startSteps,
  stopSteps,
  type Pace,
  type PlanItem,
  type Stored,
} from './lifecycle.js';
import { compileSearch, project, visible } from './lookup.js';
import { forEachLimit, listVmDir, listVmUuids, readVmFile, type DiskVm } from './scan.js';
import { addSnapshot, checkSnapshotName, findSnapshot, removeSnapshot, rollbackTo } from './snapshots.js';
import type {
  LoadOptions,
  LookupOptions,
  LookupSearch,
  StopOptions,
  Vm,
  VmCreatePayload,
  VmEvent,
  VmEventListener,
  VmPacer,
  VmStore,
  WaitHooks,
  VmSubscription,
  VmUpdatePayload,
  WarningLog,
  WriteOptions,
} from './types.js';
import { applyUpdate } from './update.js';
import { serializeVm, vmFile } from './vm-file.js';

const READ_CONCURRENCY = 32;

export interface StoreOptions {
  /** The `vms` directory of this server. */
  dir: string;
  serverUuid: string;
  identity: VmIdentity;
  log: Logger;
  /** Opt-in: watch the directory for hand edits (one inotify watch per server). */
  watch?: boolean;
  /** Clock, for tests. */
  now?: () => number;
  /**
   * How long each stage of an operation takes (the daemon's timing). Absent, or a stage of
   * 0 ms: written at once, without the intermediate states only time would show.
   */
  pacer?: VmPacer;
}

export interface OpenReport {
  loaded: number;
  bad: { uuid: string; reason: string }[];
  /** Leftover temp files of interrupted writes, removed. */
  tempsRemoved: number;
}

export class FileVmStore implements VmStore {
  readonly serverUuid: string;
  private readonly dir: string;
  private readonly identity: VmIdentity;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly index = new Map<string, Vm>();
  private readonly queue = new KeyedQueue();
  private readonly hub: EventHub;
  /** zoneid 0 is the global zone; VMs get the next one each time they boot. */
  private lastZoneid = 0;
  /** The last zone debug id handed out: every VM keeps one for its life (`zoneadm list -p`). */
  private lastZonedid = 0;
  private closed = false;
  private watch: VmDirWatch | undefined;
  private readonly pacer: VmPacer | undefined;
  /** Aborts at close(): operations still waiting out a stage finish at once. */
  private readonly closing = new AbortController();

  private constructor(opts: StoreOptions) {
    this.dir = opts.dir;
    this.serverUuid = opts.serverUuid;
    this.identity = opts.identity;
    this.log = opts.log;
    this.now = opts.now ?? Date.now;
    this.hub = new EventHub(opts.log);
    this.pacer = opts.pacer;
  }

  /** Build the index from the directory (created when missing). */
  static async open(opts: StoreOptions): Promise<{ store: FileVmStore; report: OpenReport }> {
    const store = new FileVmStore(opts);
    const report = await store.loadAll();
    if (opts.watch) store.startWatch();
    return { store, report };
  }

  private async loadAll(): Promise<OpenReport> {
    const { uuids, temps } = await listVmDir(this.dir);
    const found: DiskVm[] = [];
    const report: OpenReport = { loaded: 0, bad: [], tempsRemoved: 0 };
    // Temp files of writes a crash interrupted: the target holds the old or new version,
    // the temp file is garbage. This process is the only writer of the directory.
    for (const name of temps) {
      await fsp.unlink(path.join(this.dir, name)).then(
        () => report.tempsRemoved++,
        () => undefined,
      );
    }
    await forEachLimit(uuids, READ_CONCURRENCY, async (uuid) => {
      const r = await readVmFile(this.dir, uuid);
      if (r.kind === 'ok') found.push(r.vm);
      else if (r.kind === 'bad') report.bad.push({ uuid, reason: r.reason });
    });
    // zoneids in boot order, as the zones would have got them.
    found.sort((a, b) => String(a.stored.boot_timestamp ?? '').localeCompare(String(b.stored.boot_timestamp ?? '')));
    for (const d of found) this.noteZonedid(d.stored);
    for (const d of found) {
      applyLoadDefaults(d.stored, () => ++this.lastZonedid);
      const uuid = String(d.stored.uuid);
      this.index.set(uuid, this.makeLoaded(d.stored, new Date(d.mtimeMs), undefined));
    }
    report.loaded = found.length;
    for (const b of report.bad) {
      this.log.warn({ server: this.serverUuid, vm: b.uuid, reason: b.reason }, 'skipping unreadable VM file');
    }
    return report;
  }

  get size(): number {
    return this.index.size;
  }

  // ---- reads (index only)

  get(uuid: string, opts?: LoadOptions): Vm | undefined {
    const vm = this.index.get(uuid);
    if (!vm || !visible(vm, opts)) return undefined;
    return opts?.fields ? project(vm, opts) : vm;
  }

  list(opts?: LoadOptions): Vm[] {
    const out: Vm[] = [];
    for (const vm of this.index.values()) {
      if (visible(vm, opts)) out.push(opts?.fields ? project(vm, opts) : vm);
    }
    return out;
  }

  async load(uuid: string, opts?: LoadOptions): Promise<Vm> {
    const vm = this.index.get(uuid);
    if (!vm || !visible(vm, opts)) throw vmNotFound(uuid);
    return project(vm, opts);
  }

  async exists(uuid: string, opts?: LoadOptions): Promise<boolean> {
    const vm = this.index.get(uuid);
    return vm !== undefined && visible(vm, opts);
  }

  async lookup(search?: LookupSearch, opts?: LookupOptions): Promise<Vm[]> {
    const match = compileSearch(search);
    const out: Vm[] = [];
    for (const vm of this.index.values()) {
      if (visible(vm, opts) && match(vm)) out.push(project(vm, opts));
    }
    return out;
  }

  async lookupUuids(search?: LookupSearch, opts?: LookupOptions): Promise<string[]> {
    const match = compileSearch(search);
    const out: string[] = [];
    for (const vm of this.index.values()) {
      if (visible(vm, opts) && match(vm)) out.push(vm.uuid);
    }
    return out;
  }

  // ---- writes

  async create(payload: VmCreatePayload, opts?: WriteOptions): Promise<Vm> {
    this.assertOpen();
    const { vm: stored, dropped } = buildNewVm(payload, {
      serverUuid: this.serverUuid,
      now: new Date(this.now()),
      zonedid: this.lastZonedid + 1,
    });
    const uuid = String(stored.uuid);
    this.warnDropped(opts?.log, 'create', uuid, String(stored.brand), dropped);
    // Writes accepted before close() still complete: close() drains the queue.
    const timed = provisionPlan(stored, this.paceOf(stored));
    return this.queue.run(uuid, async () => {
      if (this.index.has(uuid) || (await fileExists(vmFile(this.dir, uuid)))) throw vmExists(uuid);
      // Taken only now: creates of other VMs may have run since the payload was built.
      stored.zonedid = ++this.lastZonedid;
      if (!timed) return project(await this.commit(uuid, undefined, stored), undefined);
      timed.first.zonedid = stored.zonedid;
      const vm = await this.commit(uuid, undefined, timed.first);
      return project(await this.runPlan(uuid, vm, timed.rest, opts?.hooks), undefined);
    });
  }

  async update(uuid: string, payload: VmUpdatePayload, opts?: WriteOptions): Promise<Vm> {
    return this.mutate(uuid, async (cur) => {
      const stored = toStored(cur);
      const { dropped, warnings } = applyUpdate(stored, payload, { serverUuid: this.serverUuid });
      this.warnDropped(opts?.log, 'update', uuid, String(cur.brand), dropped);
      for (const w of warnings) (opts?.log ?? this.log).warn({ vm: uuid }, w);
      if (serializeVm(stored) === serializeVm(toStored(cur))) return cur; // nothing changed: no write
      return this.commit(uuid, cur, stored);
    });
  }

  async delete(uuid: string, opts?: WriteOptions): Promise<void> {
    await this.mutate(uuid, async (cur) => {
      checkDeletable(cur);
      const { haltMs, uninstallMs } = destroyPauseMs(cur, this.paceOf(cur));
      let vm = cur;
      if (haltMs > 0) {
        vm = await this.runPlan(uuid, vm, [shuttingDownStep]);
        await this.pause(haltMs, opts?.hooks);
      }
      await this.pause(uninstallMs, opts?.hooks);
      await this.commit(uuid, vm, null);
      return vm;
    });
  }

  start(uuid: string, opts?: WriteOptions): Promise<Vm> {
    return this.steps(uuid, (vm, pace) => startSteps(vm, pace), opts?.hooks);
  }

  stop(uuid: string, opts?: StopOptions): Promise<Vm> {
    // The timeout bounds how long the guest's shutdown is waited on (lifecycle.ts), not the end state.
    return this.steps(uuid, (vm, pace) => stopSteps(vm, opts?.force === true, pace, opts?.timeout), opts?.hooks);
  }

  reboot(uuid: string, opts?: StopOptions): Promise<Vm> {
    return this.steps(uuid, (vm, pace) => rebootPlan(vm, pace, opts?.timeout), opts?.hooks);
  }

  halt(uuid: string): Promise<Vm> {
    return this.steps(uuid, (vm, pace) => (vm.state === 'running' ? hostHaltSteps(vm, pace) : []));
  }

  crash(uuid: string, exitStatus: number): Promise<Vm> {
    return this.steps(uuid, (vm) => {
      checkKillable(vm);
      return crashSteps(exitStatus);
    });
  }

  async kill(uuid: string, opts?: { signal?: string }): Promise<Vm> {
    const signo = parseSignal(opts?.signal);
    return this.steps(uuid, (vm) => {
      checkKillable(vm);
      return killSteps(signo);
    });
  }

  async reprovision(uuid: string, opts: { image_uuid: string; hooks?: WaitHooks | undefined }): Promise<Vm> {
    if (!isUuid(opts?.image_uuid)) throw invalidValue('image_uuid', 'image_uuid must be a UUID');
    const image = opts.image_uuid.toLowerCase();
    return this.steps(uuid, (vm, pace) => {
      checkReprovisionable(vm);
      return reprovisionSteps(String(vm.state), image, vm, pace);
    }, opts.hooks);
  }

  createSnapshot(uuid: string, name: string): Promise<Vm> {
    return this.steps(uuid, (vm) => {
      const snap = checkSnapshotName(name);
      addSnapshot(toStored(vm), snap, new Date(this.now())); // fail before queueing a write
      return [(s, now) => addSnapshot(s, snap, now)];
    });
  }

  deleteSnapshot(uuid: string, name: string): Promise<Vm> {
    return this.steps(uuid, (vm) => {
      findSnapshot(vm, name);
      return [(s) => removeSnapshot(s, name)];
    });
  }

  rollbackSnapshot(uuid: string, name: string, _opts?: WriteOptions): Promise<Vm> {
    // VM.js rollback_snapshot: halt (-F) unless stopped, roll back, then start the VM,
    // whatever state it had (vmadm never passes do_not_start).
    return this.steps(uuid, (vm) => {
      findSnapshot(vm, name);
      const rollback: PlanItem = (s) => rollbackTo(s, name);
      return vm.state === 'stopped' ? [rollback, bootStep] : [haltStep, rollback, bootStep];
    });
  }

  setCreateTimestamp(uuid: string, timestamp: string): Promise<Vm> {
    return this.steps(uuid, () => [
      (s) => {
        s.create_timestamp = timestamp;
      },
    ]);
  }

  async info(uuid: string, types?: string[], opts?: InfoOptions): Promise<Record<string, unknown>> {
    const vm = this.index.get(uuid);
    if (!vm) throw vmNotFound(uuid);
    return vmInfo(vm, types, opts);
  }

  async sysrq(uuid: string, request: string): Promise<void> {
    const vm = this.index.get(uuid);
    if (!vm) throw vmNotFound(uuid);
    checkSysrq(vm, request);
  }

  // ---- events

  subscribe(listener: VmEventListener): VmSubscription {
    // Snapshot and registration in one synchronous step: commits are synchronous too, so
    // no event can fall between them.
    const ready = new Map(this.index);
    const off = this.hub.add(listener);
    return { ready, unsubscribe: off };
  }

  /** Number of live subscriptions (for status output and tests). */
  get subscribers(): number {
    return this.hub.size;
  }

  // ---- hand edits

  /**
   * Re-read the directory: files added, changed or removed by hand become create, modify
   * and delete events. Each VM is reconciled through its write queue, so a rescan never
   * races a write to the same VM. Unreadable files are logged and leave the index as is.
   */
  async rescan(): Promise<void> {
    this.assertOpen();
    const onDisk = await listVmUuids(this.dir);
    const all = new Set([...onDisk, ...this.index.keys()]);
    await forEachLimit([...all], READ_CONCURRENCY, (uuid) => this.queue.run(uuid, () => this.reconcile(uuid)));
  }

  private async reconcile(uuid: string): Promise<void> {
    if (this.closed) return;
    const r = await readVmFile(this.dir, uuid);
    const cur = this.index.get(uuid);
    if (r.kind === 'bad') {
      this.log.warn({ server: this.serverUuid, vm: uuid, reason: r.reason }, 'ignoring unreadable VM file');
      return;
    }
    if (r.kind === 'missing') {
      if (cur) this.apply(uuid, cur, undefined);
      return;
    }
    this.noteZonedid(r.vm.stored);
    applyLoadDefaults(r.vm.stored, () => (typeof cur?.zonedid === 'number' ? cur.zonedid : ++this.lastZonedid));
    if (cur && serializeVm(toStored(cur)) === serializeVm(r.vm.stored)) return;
    // Announce a time that is never earlier than what we announced before.
    const lm = this.nextLastModified(cur, r.vm.mtimeMs);
    this.apply(uuid, cur, this.makeLoaded(r.vm.stored, lm, cur));
  }

  private startWatch(): void {
    this.watch = new VmDirWatch(this.dir, this.log, (uuids) => {
      for (const uuid of uuids) {
        this.queue.run(uuid, () => this.reconcile(uuid)).catch((err: unknown) => {
          this.log.warn({ err, server: this.serverUuid, vm: uuid }, 'reconciling a watched change failed');
        });
      }
    });
    this.watch.start();
  }

  /** Stop watching, let in-flight writes finish, drop subscribers. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort(new Error('the VM store is closing'));
    this.watch?.close();
    this.watch = undefined;
    await this.queue.drain();
    this.hub.clear();
  }

  // ---- internals

  private noteZonedid(stored: Stored): void {
    if (typeof stored.zonedid === 'number' && stored.zonedid > this.lastZonedid) this.lastZonedid = stored.zonedid;
  }

  /** vmadm logs each key it removed from a payload as a warning; so do we, once per write. */
  private warnDropped(log: WarningLog | undefined, action: string, uuid: string, brand: string, dropped: string[]): void {
    if (dropped.length === 0) return;
    (log ?? this.log).warn(
      { vm: uuid, brand, action, removed: dropped },
      `vmadm ${action}: removed from the payload what brand ${brand} does not take for ${action}: ${dropped.join(', ')}`,
    );
  }

  private assertOpen(): void {
    if (this.closed) throw new MockcloudError('ServiceUnavailable', `VM store of server ${this.serverUuid} is closed`);
  }

  /** Run `fn` on the current VM in its write queue; VmNotFound when it does not exist. */
  private mutate(uuid: string, fn: (cur: Vm) => Promise<Vm>): Promise<Vm> {
    try {
      this.assertOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    return this.queue.run(uuid, async () => {
      const cur = this.index.get(uuid);
      if (!cur) throw vmNotFound(uuid);
      return fn(cur);
    });
  }

  /**
   * A multi-step operation: `plan` checks the current VM (throwing refuses the whole
   * operation before anything is written) and returns the steps, each one write, with the
   * time a real VM spends between them.
   */
  private async steps(uuid: string, plan: (vm: Stored, pace: Pace) => PlanItem[], hooks?: WaitHooks): Promise<Vm> {
    return project(
      await this.mutate(uuid, async (cur) => this.runPlan(uuid, cur, plan(toStored(cur), this.paceOf(cur)), hooks)),
      undefined,
    );
  }

  private async runPlan(uuid: string, cur: Vm, plan: readonly PlanItem[], hooks?: WaitHooks): Promise<Vm> {
    let vm = cur;
    for (const item of plan) {
      if (isPause(item)) {
        await this.pause(item.pauseMs, hooks);
        continue;
      }
      const stored = toStored(vm);
      item(stored, new Date(this.now()));
      vm = await this.commit(uuid, vm, stored);
    }
    return vm;
  }

  /** The stages' time for this VM (nothing without a pacer). */
  private paceOf(vm: Readonly<Record<string, unknown>>): Pace {
    const pacer = this.pacer;
    if (!pacer) return () => 0;
    const who = { uuid: String(vm.uuid), brand: vm.brand };
    return (stage) => pacer.stageMs(stage, who);
  }

  /** Wait out a stage; a closing store does not wait (the operation finishes at once). */
  private async pause(ms: number, hooks?: WaitHooks): Promise<void> {
    if (ms <= 0 || !this.pacer || this.closing.signal.aborted) return;
    hooks?.beforeWait();
    try {
      await this.pacer.wait(ms, this.closing.signal).catch(() => undefined);
    } finally {
      await hooks?.afterWait();
    }
  }

  /** Write (or delete) durably, then update the index and emit, in one synchronous step. */
  private async commit(uuid: string, prev: Vm | undefined, stored: Stored | null): Promise<Vm> {
    const file = vmFile(this.dir, uuid);
    if (stored === null) {
      await unlinkDurable(file).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err; // already removed by hand: the delete stands
      });
      this.apply(uuid, prev, undefined);
      return prev!;
    }
    const lm = this.nextLastModified(prev, this.now());
    const text = serializeVm(stored);
    const next = this.makeLoaded(stored, lm, prev);
    // last_modified is the file's mtime, for us and for the dummy backend reading our files
    // (readers round the mtime to whole milliseconds); set before the file is published.
    await writeFileDurable(file, text, { mtime: lm });
    this.apply(uuid, prev, next);
    return next;
  }

  /** Change the index and emit the event: synchronous, so readers and subscribers agree. */
  private apply(uuid: string, prev: Vm | undefined, next: Vm | undefined): void {
    if (next) this.index.set(uuid, next);
    else this.index.delete(uuid);
    if ((!prev && !next) || this.hub.size === 0) return; // nobody listening: skip the diff
    const ev: VmEvent = {
      type: !prev ? 'create' : next ? 'modify' : 'delete',
      zonename: uuid,
      uuid,
      vm: (next ?? prev)!,
      seq: this.hub.nextSeq(),
      date: new Date(this.now()).toISOString(),
    };
    if (prev && next) ev.changes = diffVms(prev, next);
    this.hub.emit(ev);
  }

  private makeLoaded(stored: Stored, lastModified: Date, prev: Vm | undefined): Vm {
    let zoneid: number | undefined;
    if (zoneRunning(stored)) {
      const sameBoot = prev !== undefined && prev.zoneid !== undefined && prev.boot_timestamp === stored.boot_timestamp;
      zoneid = sameBoot ? prev.zoneid : ++this.lastZoneid;
    }
    const rt = zoneid === undefined ? { lastModified: lastModified.toISOString() } : { lastModified: lastModified.toISOString(), zoneid };
    return deepFreeze(toLoaded(stored, rt, this.identity));
  }

  /** Strictly after the previous last_modified, so consumers can order changes by it. */
  private nextLastModified(prev: Vm | undefined, candidateMs: number): Date {
    const prevMs = prev?.last_modified ? Date.parse(prev.last_modified) : Number.NEGATIVE_INFINITY;
    return new Date(Math.max(Math.floor(candidateMs), prevMs + 1));
  }
}

async function fileExists(file: string): Promise<boolean> {
  // A single lstat of a local file: cheaper in place than as a thread-pool round trip.
  return fs.lstatSync(file, { throwIfNoEntry: false }) !== undefined;
}
