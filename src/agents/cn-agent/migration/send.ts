/**
 * The sending migration process on the source CN (sdc-cn-agent lib/backends/smartos/bin/
 * machine-migrate-send.js), started by machine_migrate `action: 'sync'`. VMAPI's sync
 * workflow (sdc-vmapi lib/workflows/vm-migration/sync.js) connects and sends, one JSON line
 * each with `type: 'request'` and an `eventId`: `set-record` {record}, `sync` {host, port of
 * the receiving process}, then `end`. Answers are `{type:'response', command, eventId}` or
 * `{type:'error', ..., message: 'sync error: ...'}`; while a sync runs, every connection that
 * sent `sync` or `watch` gets `{type:'progress', current_progress, total_progress, eta_ms,
 * transfer_bytes_second, phase:'sync', state:'running', store}` once a second when bytes
 * moved (and once a minute regardless, `store: true`). `ping` answers `{pid, version}`;
 * `stop` and `end` end the process (a running sync is aborted).
 *
 * The sync, per dataset of the VM, in the real order: ask the receiver for its snapshot
 * names, work out the next `vm-migration-N` snapshot (first, incremental or resumed),
 * snapshot, estimate; then send each dataset (`sync` on the receiver, the stream, wait for
 * `sync-success`), keep only the newest migration snapshot on both sides, and `stop` the
 * receiver. The stream is a stand-in (see receive.ts) of the size state.ts
 * gives; `zfs_send_mbps_limit` paces it as the real throttle does. Unlike the real process,
 * a last progress event is sent when a sync ends, so a sync shorter than a second still
 * reports its bytes.
 */
import { waitOn, type Wait } from '../../../timing/wait.js';
import net from 'node:net';
import type { TaskContext } from '../types.js';
import { LineReader, MigrationListener, refuse, respond, writeEvent } from './listener.js';
import { datasetsToSync, migrationState, sendSize, SNAPSHOT_PREFIX, type MigrationState } from './state.js';
import type { StreamHeader } from './receive.js';

const SYNC_ABORT_MSG = 'Sync was aborted';
const RECEIVER_TIMEOUT_MS = 5 * 60 * 1000;
const CHUNK = Buffer.alloc(64 * 1024);
const MEGABITS_TO_BYTES = (1000 * 1000) / 8;

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One connection to the receiving process, with its request/response bookkeeping. */
class ReceiverConnection {
  private readonly pending = new Map<number, { resolve: (e: Obj) => void; reject: (err: Error) => void }>();
  private syncWaiter: { resolve: () => void; reject: (err: Error) => void } | undefined;
  private ended = false;
  private failure: Error | undefined;

  private constructor(
    readonly sock: net.Socket,
    private readonly nextId: () => number,
  ) {
    new LineReader(sock, (line) => this.onLine(line), () => this.fail(new Error('receiver sent an overlong line')));
    sock.setTimeout(RECEIVER_TIMEOUT_MS, () => {
      sock.destroy();
      this.fail(new Error('receiver socket timeout'));
    });
    sock.on('error', (err) => this.fail(err));
    sock.on('end', () => {
      if (!this.ended) this.fail(new Error('No "sync-success" received from target cn-agent process'));
    });
    sock.on('close', () => this.fail(new Error('receiver connection closed')));
  }

  static connect(host: string, port: number): Promise<ReceiverConnection> {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host, port, allowHalfOpen: true });
      sock.once('error', reject);
      sock.once('connect', () => {
        sock.off('error', reject);
        let id = 1;
        resolve(new ReceiverConnection(sock, () => id++));
      });
    });
  }

  request(command: Obj): Promise<Obj> {
    if (this.failure) return Promise.reject(this.failure);
    const eventId = this.nextId();
    return new Promise((resolve, reject) => {
      this.pending.set(eventId, { resolve, reject });
      writeEvent(this.sock, { ...command, type: 'request', eventId });
    });
  }

  /** After `sync` was answered: the stream goes out, then this resolves on `sync-success`. */
  waitSyncSuccess(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.syncWaiter = { resolve, reject };
    });
  }

  /** The caller is done: an `end` from the receiver is no failure any more. */
  close(): void {
    this.ended = true;
    this.sock.end();
    setTimeout(() => this.sock.destroy(), 1000).unref();
  }

  destroy(): void {
    this.ended = true;
    this.sock.destroy();
  }

  private onLine(line: string): void {
    let event: Obj;
    try {
      event = JSON.parse(line) as Obj;
    } catch {
      return;
    }
    if (event.type === 'error') {
      let msg = String(event.message);
      if (typeof event.stderr === 'string' && event.stderr.trim()) msg += ` (${event.stderr.trim()})`;
      this.fail(new Error(msg), event.eventId);
      return;
    }
    if (event.type === 'sync-success') {
      this.ended = true;
      const w = this.syncWaiter;
      this.syncWaiter = undefined;
      w?.resolve();
      return;
    }
    const p = this.pending.get(Number(event.eventId));
    if (!p) return;
    this.pending.delete(Number(event.eventId));
    p.resolve(event);
  }

  private fail(err: Error, eventId?: unknown): void {
    if (eventId !== undefined && this.pending.has(Number(eventId))) {
      const p = this.pending.get(Number(eventId))!;
      this.pending.delete(Number(eventId));
      // An error for one request also ends a sync waiting on this connection.
      this.syncWaiter?.reject(err);
      this.syncWaiter = undefined;
      p.reject(err);
      return;
    }
    if (this.ended && !this.syncWaiter && this.pending.size === 0) return;
    this.failure ??= err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.syncWaiter?.reject(err);
    this.syncWaiter = undefined;
  }
}

/** What the sync works out for one dataset before sending it. */
interface DatasetPlan {
  zfsFilesystem: string;
  target: string;
  isFirstSync: boolean;
  resumeSync: boolean;
  prevSnapshotName: string;
  snapshotName: string;
  estimatedSize: number;
}

export class MigrationSender extends MigrationListener {
  private readonly cn: TaskContext['cn'];
  /** How long a sync of N bytes takes on a real CN (the timing profile's `tasks.machine_migrate.sync`). */
  private readonly syncMs: (bytes: number) => number;
  private readonly wait: Wait;
  private readonly mstate: MigrationState;
  private readonly payload: Obj;
  private record: Obj;
  private syncRunning = false;
  private aborted = false;
  private current: ReceiverConnection | undefined;
  private readonly watchers = new Set<net.Socket>();
  private watchTimer: NodeJS.Timeout | undefined;
  private currentProgress = 0;
  private totalProgress = 100;
  private lastProgress = 0;
  private lastMs = performance.now();
  private lastSpeed = 0;
  private ticks = 0;

  constructor(ctx: TaskContext, vmUuid: string, payload: Obj) {
    super(ctx, vmUuid);
    this.cn = ctx.cn;
    const timing = ctx.env.timing;
    const vm = ctx.cn.vms.get(vmUuid, { include_dni: true });
    this.syncMs = (bytes) => timing?.ms('tasks.machine_migrate.sync', { server: ctx.cn.uuid, vm: vmUuid, brand: vm?.brand, bytes }) ?? 0;
    const scheduler = ctx.env.scheduler;
    this.wait = scheduler ? waitOn(scheduler) : (ms) => new Promise((r) => setTimeout(r, ms));
    this.mstate = migrationState(ctx);
    this.payload = payload;
    this.record = (payload.migrationTask as Obj).record as Obj;
  }

  protected override onEnd(): void {
    this.aborted = true;
    this.current?.destroy();
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = undefined;
  }

  protected onCommand(sock: net.Socket, event: Obj): void {
    if (event.type !== 'request') {
      // The real process asserts this and dies.
      this.log.error({ event }, 'not a request: ending the process');
      this.kill();
      return;
    }
    switch (event.command) {
      case 'end':
      case 'stop':
        return this.commandStop(sock, event);
      case 'ping':
        return this.commandPing(sock, event);
      case 'set-record':
        if (!isObj(event.record)) return this.kill();
        this.record = event.record;
        respond(sock, event);
        return;
      case 'watch':
        if (!this.watch(sock)) this.kill();
        return;
      case 'sync':
        this.commandSync(sock, event);
        return;
      default:
        this.log.error('Unhandled socket event - ignoring: %j', event);
    }
  }

  private commandSync(sock: net.Socket, event: Obj): void {
    if (this.syncRunning) {
      refuse(sock, event, 'sync error: sync handler was already configured');
      this.end();
      return;
    }
    const vm = this.payload.vm;
    if (!this.watch(sock) || !isObj(vm) || typeof event.host !== 'string' || typeof event.port !== 'number') {
      this.log.error({ event }, 'sync without what the real process asserts: ending the process');
      this.kill();
      return;
    }
    this.syncRunning = true;
    this.run(vm, event.host, event.port).then(
      () => {
        this.sendProgress(false, true);
        this.log.info('sync command finished successfully');
        respond(sock, event);
      },
      (err: Error) => {
        this.log.error({ err }, 'commandSync failed - ending source process');
        refuse(sock, event, `sync error: ${err.message}`, { err: { message: err.message } });
        this.end();
      },
    );
  }

  /** Add a progress watcher (the Watcher asserts the record names the VM). */
  private watch(sock: net.Socket): boolean {
    if (typeof this.record?.vm_uuid !== 'string') return false;
    this.watchers.add(sock);
    sock.once('close', () => this.watchers.delete(sock));
    if (!this.watchTimer) {
      this.watchTimer = setInterval(() => {
        this.ticks++;
        const minute = this.ticks % 60 === 0;
        this.sendProgress(minute, false);
      }, 1000);
      this.watchTimer.unref();
    }
    return true;
  }

  private sendProgress(isMinute: boolean, final: boolean): void {
    const made = this.currentProgress - this.lastProgress;
    const now = performance.now();
    const speed = (made / Math.max(1, now - this.lastMs)) * 1000;
    const avgSpeed = (speed + this.lastSpeed) / 2;
    const etaMs = (Math.max(this.totalProgress - this.currentProgress, 5000) / Math.max(1, avgSpeed)) * 1000;
    this.lastMs = now;
    this.lastProgress = this.currentProgress;
    this.lastSpeed = speed;
    if (!isMinute && made <= 0) return;
    const event = {
      current_progress: this.currentProgress,
      eta_ms: final ? 0 : Math.round(etaMs),
      phase: 'sync',
      state: 'running',
      store: isMinute,
      total_progress: Math.max(this.currentProgress, this.totalProgress),
      transfer_bytes_second: Math.round(avgSpeed),
      type: 'progress',
    };
    for (const sock of this.watchers) writeEvent(sock, event);
  }

  private checkAborted(): void {
    if (this.aborted) throw new Error(SYNC_ABORT_MSG);
  }

  private async connect(host: string, port: number): Promise<ReceiverConnection> {
    this.checkAborted();
    const conn = await ReceiverConnection.connect(host, port);
    this.current = conn;
    if (this.aborted) {
      conn.destroy();
      throw new Error(SYNC_ABORT_MSG);
    }
    return conn;
  }

  /** The target's dataset name: the uuid override of a test migration changes it. */
  private targetName(fs: string): string {
    const from = this.record.vm_uuid;
    const to = this.record.target_vm_uuid;
    return typeof from === 'string' && typeof to === 'string' && from !== to ? fs.split(from).join(to) : fs;
  }

  private async run(vm: Obj, host: string, port: number): Promise<void> {
    const datasets = datasetsToSync(vm);
    const plans: DatasetPlan[] = [];
    try {
      for (const fs of datasets) plans.push(await this.plan(fs, host, port));
      this.totalProgress = plans.reduce((n, p) => n + p.estimatedSize, 0);
      for (const plan of plans) await this.send(plan, host, port);
      this.totalProgress = this.currentProgress;
      for (const plan of plans) await this.cleanup(plan, host, port);
    } finally {
      await this.shutdownReceiver(host, port);
    }
  }

  /** collectSyncInfo for one dataset: snapshot names, the next snapshot, the estimate. */
  private async plan(fs: string, host: string, port: number): Promise<DatasetPlan> {
    const source = this.mstate.snapshots.get(fs) ?? [];
    const conn = await this.connect(host, port);
    try {
      const target = this.targetName(fs);
      const names = await conn.request({ command: 'get-zfs-snapshot-names', zfsFilesystem: target });
      const targetNames = (Array.isArray(names.names) ? names.names : []).filter(
        (n): n is string => typeof n === 'string' && n.startsWith(SNAPSHOT_PREFIX),
      );
      const plan = determineSnapshotNames(fs, target, source, targetNames);
      if (plan.resumeSync) {
        const token = await conn.request({ command: 'get-zfs-resume-token', zfsFilesystem: target });
        if (!token.token) plan.resumeSync = false;
      }
      this.checkAborted();
      if (!plan.resumeSync && !source.includes(plan.snapshotName)) {
        this.log.info('zfs snapshot -r %s@%s', fs, plan.snapshotName);
        this.mstate.snapshots.set(fs, [...source, plan.snapshotName]);
        await this.mstate.save();
      }
      plan.estimatedSize = sendSize(this.cn, fs, !plan.isFirstSync);
      this.log.debug({ zfsFilesystem: fs, estimatedSize: plan.estimatedSize }, 'getEstimate');
      return plan;
    } finally {
      conn.close();
    }
  }

  private async send(plan: DatasetPlan, host: string, port: number): Promise<void> {
    const conn = await this.connect(host, port);
    try {
      await conn.request({
        command: 'sync',
        isFirstSync: plan.isFirstSync,
        resumeSync: plan.resumeSync,
        zfsFilesystem: plan.target,
      });
      const done = conn.waitSyncSuccess();
      done.catch(() => undefined);
      const snapshots = this.mstate.snapshots.get(plan.zfsFilesystem) ?? [];
      const header: StreamHeader = {
        mockcloud: 'zfs-send',
        zfsFilesystem: plan.target,
        from: plan.isFirstSync ? '' : plan.prevSnapshotName,
        to: plan.snapshotName,
        snapshots: snapshots.slice(0, snapshots.indexOf(plan.snapshotName) + 1),
        size: plan.estimatedSize,
      };
      // The header is part of the stream (sizes are at least 64 KiB, a header well under that).
      const line = Buffer.from(`${JSON.stringify(header)}\n`);
      if (line.length > header.size) throw new Error(`stream header of ${line.length} bytes exceeds the stream`);
      await this.stream(conn.sock, line, header.size);
      conn.sock.end();
      await done;
    } finally {
      conn.close();
    }
  }

  /**
   * Write the stream, counting progress as bytes leave: paced by zfs_send_mbps_limit, and by
   * the time the timing profile gives a sync of this size (the slower of the two).
   */
  private async stream(sock: net.Socket, header: Buffer, size: number): Promise<void> {
    const limit = Number(this.payload.zfs_send_mbps_limit);
    const limited = Number.isFinite(limit) && limit > 0 ? limit * MEGABITS_TO_BYTES : 0;
    const drawnMs = this.syncMs(size);
    const timed = drawnMs > 0 ? (size / drawnMs) * 1000 : 0;
    const bytesPerSecond = limited > 0 && timed > 0 ? Math.min(limited, timed) : limited || timed;
    const started = performance.now();
    let sent = 0;
    const write = async (buf: Buffer): Promise<void> => {
      this.checkAborted();
      if (sock.destroyed) throw new Error('receiver connection closed');
      const ok = sock.write(buf);
      sent += buf.length;
      this.currentProgress += buf.length;
      if (!ok) await new Promise<void>((resolve) => {
        const go = (): void => {
          sock.off('drain', go);
          sock.off('close', go);
          resolve();
        };
        sock.on('drain', go);
        sock.on('close', go);
      });
      if (bytesPerSecond > 0) {
        const due = (sent / bytesPerSecond) * 1000 - (performance.now() - started);
        if (due > 0) await this.wait(due);
      }
    };
    await write(header);
    while (sent < size) await write(CHUNK.subarray(0, Math.min(CHUNK.length, size - sent)));
  }

  /** Keep only the newest migration snapshot on both sides. */
  private async cleanup(plan: DatasetPlan, host: string, port: number): Promise<void> {
    const source = this.mstate.snapshots.get(plan.zfsFilesystem) ?? [];
    if (source.length > 1) {
      this.mstate.snapshots.set(plan.zfsFilesystem, source.slice(-1));
      await this.mstate.save();
    }
    if (plan.isFirstSync || !plan.prevSnapshotName.startsWith(SNAPSHOT_PREFIX)) return;
    const conn = await this.connect(host, port);
    try {
      await conn.request({ command: 'zfs-destroy', zfsFilesystem: `${plan.target}@${plan.prevSnapshotName}` });
    } finally {
      conn.close();
    }
  }

  private async shutdownReceiver(host: string, port: number): Promise<void> {
    try {
      const conn = await ReceiverConnection.connect(host, port);
      try {
        await conn.request({ command: 'stop' });
      } finally {
        conn.close();
      }
    } catch (err) {
      this.log.warn({ err }, 'Error shutting down receiver - ignoring');
    }
  }
}

/** The real determineSnapshotNames (docker's non-migration first snapshot aside). */
function determineSnapshotNames(fs: string, target: string, source: string[], targetNames: string[]): DatasetPlan {
  const plan: DatasetPlan = {
    zfsFilesystem: fs,
    target,
    isFirstSync: targetNames.length === 0,
    resumeSync: false,
    prevSnapshotName: '',
    snapshotName: `${SNAPSHOT_PREFIX}1`,
    estimatedSize: 0,
  };
  if (source.length === 0) {
    if (targetNames.length > 0) throw new Error('Migration snapshots already exist on the target server');
    return plan;
  }
  plan.prevSnapshotName = source[source.length - 1]!;
  plan.snapshotName = `${SNAPSHOT_PREFIX}${Number(plan.prevSnapshotName.slice(SNAPSHOT_PREFIX.length)) + 1}`;
  plan.resumeSync = true;
  if (!targetNames.includes(plan.prevSnapshotName)) {
    plan.snapshotName = plan.prevSnapshotName;
    if (source.length > 1) {
      plan.prevSnapshotName = source[source.length - 2]!;
      if (!targetNames.includes(plan.prevSnapshotName)) throw new Error('Migration snapshots are missing from the target server');
    } else {
      plan.isFirstSync = true;
      plan.prevSnapshotName = '';
    }
  }
  if (targetNames.includes(plan.snapshotName)) throw new Error('Migration snapshots already exist on the target server');
  return plan;
}
