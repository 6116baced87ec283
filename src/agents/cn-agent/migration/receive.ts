/**
 * The receiving migration process on the target CN (sdc-cn-agent lib/backends/smartos/bin/
 * machine-migrate-receive.js), started by machine_migrate `action: 'receive'`. The sender
 * connects and sends commands, one JSON line each (`{type:'request', command, eventId, ...}`),
 * answered `{type:'response', command, eventId, ...}` or `{type:'error', ..., message}`:
 *
 * - `get-zfs-snapshot-names` {zfsFilesystem}: the dataset's snapshots, oldest first (`[]` when
 *   the dataset does not exist);
 * - `get-zfs-resume-token` {zfsFilesystem}: `token: ''` (a receive here never stops half way);
 * - `sync` {zfsFilesystem, isFirstSync, resumeSync}: answered, then every further byte on the
 *   connection is the send stream, until the sender half-closes; then `{type:'sync-success'}`;
 * - `zfs-destroy` {zfsFilesystem: 'ds@snap'}: drop that snapshot (a missing one is fine);
 * - `ping`, `stop` (answered, then the process ends); `rate`/`status` are Not Implemented.
 *
 * The stream is the stand-in send.ts writes: a header line naming the dataset and
 * the snapshots it carries, then filler up to the announced size. A complete stream records
 * the snapshots on this CN's dataset (a first sync replaces what was there).
 */
import type net from 'node:net';
import type { TaskContext } from '../types.js';
import { LineReader, MigrationListener, PROCESS_VERSION, refuse, respond, writeEvent } from './listener.js';
import { migrationState, SNAPSHOT_PREFIX, vmOfDataset, type MigrationState } from './state.js';

const MAX_HEADER = 64 * 1024;

/** The first line of the stand-in send stream. */
export interface StreamHeader {
  mockcloud: 'zfs-send';
  zfsFilesystem: string;
  /** Incremental from this snapshot ('' for a full stream). */
  from: string;
  /** The snapshot the stream brings the dataset to. */
  to: string;
  /** The snapshots a full (replicated) stream carries, oldest first. */
  snapshots: string[];
  /** Bytes of the whole stream, header included. */
  size: number;
}

export class MigrationReceiver extends MigrationListener {
  private readonly cn: TaskContext['cn'];
  private readonly mstate: MigrationState;

  constructor(ctx: TaskContext, vmUuid: string) {
    super(ctx, vmUuid);
    this.cn = ctx.cn;
    this.mstate = migrationState(ctx);
  }

  protected onCommand(sock: net.Socket, event: Record<string, unknown>, reader: LineReader): void {
    const reply = (extra: Record<string, unknown> = {}): void => respond(sock, event, extra);
    const fs = typeof event.zfsFilesystem === 'string' ? event.zfsFilesystem : undefined;
    switch (event.command) {
      case 'stop':
        return this.commandStop(sock, event);
      case 'ping':
        return this.commandPing(sock, event);
      case 'rate':
      case 'status':
        refuse(sock, event, 'Not Implemented', { version: PROCESS_VERSION });
        return;
      case 'get-zfs-resume-token':
        if (!fs) return this.badCommand(sock, event);
        reply(this.exists(fs) ? { token: '' } : {});
        return;
      case 'get-zfs-snapshot-names':
        if (!fs) return this.badCommand(sock, event);
        reply({ names: this.exists(fs) ? this.snapshotNames(fs) : [] });
        return;
      case 'zfs-destroy': {
        if (!fs) return this.badCommand(sock, event);
        const [dataset, snap] = fs.split('@');
        const snaps = this.mstate.snapshots.get(dataset!);
        if (snap && snaps) this.mstate.snapshots.set(dataset!, snaps.filter((s) => s !== snap));
        this.saved(sock, event, () => reply());
        return;
      }
      case 'sync':
        if (!fs || typeof event.isFirstSync !== 'boolean' || typeof event.resumeSync !== 'boolean') {
          return this.badCommand(sock, event);
        }
        this.receive(sock, event, fs, reader);
        return;
      default:
        this.log.error({ event }, 'Unknown command');
        refuse(sock, event, 'Unknown command', { version: PROCESS_VERSION });
    }
  }

  /** Answer once the snapshots are on disk; a failed write is the command's error. */
  private saved(sock: net.Socket, event: Record<string, unknown>, then: () => void): void {
    this.mstate.save().then(then, (err: unknown) => {
      this.log.error({ err }, 'cannot save the migration snapshots');
      refuse(sock, event, `zfs error: ${String(err)}`);
    });
  }

  /** A command without what the real process asserts: that process would have died. */
  private badCommand(sock: net.Socket, event: Record<string, unknown>): void {
    this.log.error({ event }, 'command is missing its arguments: ending the process');
    sock.destroy();
    this.kill();
  }

  private exists(fs: string): boolean {
    return this.mstate.snapshots.has(fs) || vmOfDataset(this.cn, fs) !== undefined;
  }

  /** Every snapshot of the dataset, oldest first: the VM's own, then the migration ones. */
  private snapshotNames(fs: string): string[] {
    const vm = vmOfDataset(this.cn, fs);
    const own = vm && fs === (vm.zfs_filesystem ?? `${vm.zpool ?? 'zones'}/${vm.uuid}`) ? (vm.snapshots ?? []) : [];
    const byAge = [...own].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
    // vmadm keeps a VM snapshot as the zone dataset's `@vmsnap-<name>`.
    return [...byAge.map((s) => `vmsnap-${s.name}`), ...(this.mstate.snapshots.get(fs) ?? [])];
  }

  private receive(sock: net.Socket, event: Record<string, unknown>, fs: string, reader: LineReader): void {
    if (event.isFirstSync && !event.resumeSync) {
      // A first sync replaces the dataset: its old migration snapshots go with it.
      this.mstate.snapshots.delete(fs);
    }
    let header: StreamHeader | undefined;
    let headerBuf = Buffer.alloc(0);
    let received = 0;
    let failed = false;
    const error = (message: string, stderr: string): void => {
      if (failed) return;
      failed = true;
      refuse(sock, event, message, { stderr });
    };
    reader.takeRaw((chunk) => {
      this.touch();
      received += chunk.length;
      if (header || failed) return;
      headerBuf = Buffer.concat([headerBuf, chunk.subarray(0, MAX_HEADER)]);
      const nl = headerBuf.indexOf(0x0a);
      if (nl < 0) {
        if (headerBuf.length >= MAX_HEADER) error('zfs receive exited with code: 1', 'cannot receive: invalid stream (bad magic number)\n');
        return;
      }
      try {
        const h = JSON.parse(headerBuf.subarray(0, nl).toString('utf8')) as StreamHeader;
        if (h.mockcloud !== 'zfs-send' || typeof h.to !== 'string' || !Number.isSafeInteger(h.size)) throw new Error('not a stream');
        header = h;
      } catch {
        error('zfs receive exited with code: 1', 'cannot receive: invalid stream (bad magic number)\n');
      }
    });
    sock.once('end', () => {
      if (failed) return;
      if (!header || received !== header.size) {
        error('zfs receive exited with code: 1', `cannot receive new filesystem stream: checksum mismatch or incomplete stream.\nPartially received snapshot is saved.\n`);
        return;
      }
      const have = this.mstate.snapshots.get(fs) ?? [];
      if (header.from) {
        if (!have.includes(header.from)) {
          error(
            'zfs receive exited with code: 1',
            `cannot receive incremental stream: most recent snapshot of ${fs} does not\nmatch incremental source\n`,
          );
          return;
        }
        this.mstate.snapshots.set(fs, [...have.filter((s) => s !== header!.to), header.to]);
      } else {
        this.mstate.snapshots.set(fs, header.snapshots.filter((s) => s.startsWith(SNAPSHOT_PREFIX)));
      }
      this.log.info({ zfsFilesystem: fs, snapshot: header.to, bytes: received }, 'zfs receive done');
      this.saved(sock, event, () => {
        writeEvent(sock, { type: 'sync-success' });
        sock.end();
      });
    });
    // The sender waits for this before it starts sending.
    respond(sock, event);
  }
}
