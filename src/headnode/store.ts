/**
 * Persistence for the dev headnode's services: named JSON state documents under
 * `<data-dir>/headnode/<name>.json`, each loaded at start and written with writeFileDurable
 * (temp + fsync + rename + dir fsync), so a crash leaves the old or the new document, never
 * a torn one.
 *
 * Two ways to save a document:
 * - `save()` resolves once the state as of the call is on disk. HTTP writes await it before
 *   answering, so whatever a client was told about survives a crash. Concurrent callers are
 *   group-committed: while one write runs, every further save joins the single next write.
 * - `saveSoon()` only schedules a write (at most one per `lazyDelayMs`, ~100 ms by default),
 *   for changes nobody waits on.
 * `flush()` writes whatever is pending; services call it from `stop()`.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { MockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';

/** Raw read/write of one named document (what CNAPI's store adapter consumes). */
export interface DocIo {
  /** The parsed document, or undefined when it does not exist yet. */
  read(): Promise<unknown>;
  write(value: unknown): Promise<void>;
}

export interface HeadnodeStoreOptions {
  /** The mockcloud data dir; documents live in `<dataDir>/headnode/`. */
  dataDir: string;
  log: Logger;
}

const DOC_NAME_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export class HeadnodeStore {
  readonly dir: string;
  private readonly log: Logger;
  private mkdirDone: Promise<void> | undefined;

  constructor(opts: HeadnodeStoreOptions) {
    this.dir = path.join(opts.dataDir, 'headnode');
    this.log = opts.log;
  }

  /** The file a document lives in. */
  fileOf(name: string): string {
    if (!DOC_NAME_RE.test(name)) throw new Error(`invalid headnode document name: ${name}`);
    return path.join(this.dir, `${name}.json`);
  }

  /** Plain read/write access to a document (no coalescing). */
  io(name: string): DocIo {
    const file = this.fileOf(name);
    return {
      read: async () => {
        let text: string;
        try {
          text = await fsp.readFile(file, 'utf8');
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw err;
        }
        try {
          return JSON.parse(text) as unknown;
        } catch (err) {
          // writeFileDurable never leaves a torn file, so this is damage from outside:
          // refuse to start rather than silently replace the state with a fresh one.
          throw new MockcloudError('InternalError', `headnode state ${file} is not valid JSON`, { cause: err });
        }
      },
      write: async (value) => {
        await this.ensureDir();
        // Compact: NAPI's document holds every NIC and is rewritten on each change.
        await writeFileDurable(file, `${JSON.stringify(value)}\n`);
      },
    };
  }

  /**
   * A document with coalesced saves. `snapshot` returns what to write (called when a write
   * starts, so it sees every change made before that moment).
   */
  document(name: string, snapshot: () => unknown, opts: { lazyDelayMs?: number } = {}): StateDocument {
    return new StateDocument({
      io: this.io(name),
      snapshot,
      log: this.log.child({ doc: name }),
      lazyDelayMs: opts.lazyDelayMs ?? 100,
    });
  }

  private ensureDir(): Promise<void> {
    if (!this.mkdirDone) {
      this.mkdirDone = fsp.mkdir(this.dir, { recursive: true }).then(
        () => undefined,
        (err: unknown) => {
          this.mkdirDone = undefined;
          throw err;
        },
      );
    }
    return this.mkdirDone;
  }
}

export class StateDocument {
  private readonly io: DocIo;
  private readonly snapshot: () => unknown;
  private readonly log: Logger;
  private readonly lazyDelayMs: number;
  /** The write in progress. */
  private running: Promise<void> | undefined;
  /** The write queued behind it, shared by every save() made while `running`. */
  private queued: Promise<void> | undefined;
  private lazyTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Lazy saves failed in a row (a full disk): retried with backoff until one succeeds. */
  private failedSaves = 0;

  constructor(opts: { io: DocIo; snapshot: () => unknown; log: Logger; lazyDelayMs: number }) {
    this.io = opts.io;
    this.snapshot = opts.snapshot;
    this.log = opts.log;
    this.lazyDelayMs = opts.lazyDelayMs;
  }

  /** The stored document, or undefined on first start. */
  load(): Promise<unknown> {
    this.closed = false;
    return this.io.read();
  }

  /** Resolves once the state as of this call is durable on disk. */
  save(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.running) return this.startWrite();
    // Never two writes of one document at once: a later rename could land an older state.
    this.queued = this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.startWrite();
      });
    return this.queued;
  }

  /**
   * Schedule a save within `lazyDelayMs`. Nobody waits for it, so a failure is retried (after
   * `lazyDelayMs`, doubling up to 60 s) until a save succeeds, with one log line when it starts failing and
   * one when it works again, not one per attempt.
   */
  saveSoon(delayMs = this.lazyDelayMs): void {
    if (this.lazyTimer || this.closed) return;
    this.lazyTimer = setTimeout(() => {
      this.lazyTimer = undefined;
      this.save().then(
        () => {
          if (this.failedSaves > 0) this.log.info({ failedSaves: this.failedSaves }, 'headnode state saved again');
          this.failedSaves = 0;
        },
        (err: unknown) => {
          if (this.failedSaves++ === 0) this.log.error({ err }, 'saving headnode state failed; retrying until it can be saved');
          this.saveSoon(Math.min(60_000, Math.max(1, this.lazyDelayMs) * 2 ** Math.min(this.failedSaves, 16)));
        },
      );
    }, delayMs);
    this.lazyTimer.unref();
  }

  /** Write what is pending, cancel the lazy timer; later saveSoon() calls are ignored. */
  async flush(): Promise<void> {
    this.closed = true;
    if (this.lazyTimer) {
      clearTimeout(this.lazyTimer);
      this.lazyTimer = undefined;
    }
    await this.save();
  }

  private startWrite(): Promise<void> {
    // The snapshot is taken in a microtask, so a throwing snapshot() rejects this write
    // instead of escaping from save().
    const p: Promise<void> = Promise.resolve()
      .then(() => this.io.write(this.snapshot()))
      .finally(() => {
        if (this.running === p) this.running = undefined;
      });
    this.running = p;
    return p;
  }
}
