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
 *
 * A document that holds thousands of records changed one at a time (NAPI's NICs, CNAPI's
 * servers) is a `JournaledDocument`: a save appends the records changed since the last one to
 * `<name>.journal` (one JSON line each, fsynced) instead of rewriting the whole document, and
 * the whole document is rewritten (the journal emptied) only when the journal has grown as
 * large as it, on a structural change, and at `flush()`. At load the journal is read after the
 * document and its entries applied by the service. A crash mid-append leaves a torn last line,
 * never acknowledged: it is dropped.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import fs from 'node:fs';
import { fsyncDir, writeFileDurable } from '../common/durable-file.js';
import { MockcloudError } from '../common/errors.js';
import { failureFields, type Logger } from '../common/log.js';

/** Raw read/write of one named document (what CNAPI's store adapter consumes). */
export interface DocIo {
  /** The parsed document, or undefined when it does not exist yet. */
  read(): Promise<unknown>;
  write(value: unknown): Promise<void>;
  /** The document already serialized (one line of JSON); what `write` does after stringifying. */
  writeText?(text: string): Promise<void>;
  /** Its size on disk in bytes, 0 when absent. */
  size?(): number;
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
        // Compact: NAPI's document holds every NIC.
        await writeFileDurable(file, `${JSON.stringify(value)}\n`);
      },
      writeText: async (text) => {
        await this.ensureDir();
        await writeFileDurable(file, text);
      },
      size: () => {
        try {
          return fs.statSync(file).size;
        } catch {
          return 0;
        }
      },
    };
  }

  /**
   * A journaled document (see the top of this file): `source.drain()` gives the entries changed
   * since the last save, or 'all' when only a whole rewrite will do.
   */
  journaled(name: string, source: JournalSource, opts: { lazyDelayMs?: number; minCompactBytes?: number } = {}): JournaledDocument {
    return new JournaledDocument({
      io: this.io(name),
      journalFile: path.join(this.dir, `${name}.journal`),
      source,
      log: this.log.child({ doc: name }),
      lazyDelayMs: opts.lazyDelayMs ?? 100,
      minCompactBytes: opts.minCompactBytes ?? 1024 * 1024,
    });
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
  protected readonly io: DocIo;
  protected readonly snapshot: () => unknown;
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
          if (this.failedSaves++ === 0) this.log.error(failureFields(err), 'saving headnode state failed; retrying until it can be saved');
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

  /** One write of the state as of now (called with no other write of this document running). */
  protected writeState(): Promise<void> {
    return this.io.write(this.snapshot());
  }

  private startWrite(): Promise<void> {
    // The snapshot is taken in a microtask, so a throwing snapshot() rejects this write
    // instead of escaping from save().
    const p: Promise<void> = Promise.resolve()
      .then(() => this.writeState())
      .finally(() => {
        if (this.running === p) this.running = undefined;
      });
    this.running = p;
    return p;
  }
}

/** What a journaled document is made of: the whole state, and the changes since the last save. */
export interface JournalSource {
  snapshot(): unknown;
  /** The entries changed since the last call (each a JSON value), or 'all' for a whole rewrite. */
  drain(): unknown[] | 'all';
}

export interface JournaledLoad {
  /** The stored document, undefined on first start. */
  snapshot: unknown;
  /** The journal's entries written after it, in order. */
  entries: unknown[];
}

export class JournaledDocument extends StateDocument {
  private readonly journalFile: string;
  private readonly source: JournalSource;
  private readonly minCompactBytes: number;
  private readonly jlog: Logger;
  private fd: number | undefined;
  private journalBytes = 0;
  private snapshotBytes = 0;
  private hasSnapshot = false;
  private compactNext = false;

  constructor(opts: { io: DocIo; journalFile: string; source: JournalSource; log: Logger; lazyDelayMs: number; minCompactBytes: number }) {
    super({ io: opts.io, snapshot: () => opts.source.snapshot(), log: opts.log, lazyDelayMs: opts.lazyDelayMs });
    this.journalFile = opts.journalFile;
    this.source = opts.source;
    this.minCompactBytes = opts.minCompactBytes;
    this.jlog = opts.log;
  }

  /** The stored document and the journal entries to apply to it (instead of load()). */
  async loadJournaled(): Promise<JournaledLoad> {
    const snapshot = await super.load();
    this.hasSnapshot = snapshot !== undefined;
    this.snapshotBytes = this.hasSnapshot ? (this.io.size?.() ?? 0) : 0;
    let text = '';
    try {
      text = fs.readFileSync(this.journalFile, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    // Whole lines only: a last line without its newline is an append a crash cut short (never
    // acknowledged), and is cut off so the next append starts on a line of its own.
    const entries: unknown[] = [];
    const lines = text.split('\n');
    const complete = lines.slice(0, -1);
    let good = 0;
    for (let i = 0; i < complete.length; i++) {
      const line = complete[i]!;
      if (line !== '') {
        try {
          entries.push(JSON.parse(line));
        } catch (err) {
          if (i < complete.length - 1) {
            throw new MockcloudError('InternalError', `headnode journal ${this.journalFile} is damaged at line ${i + 1}`, { cause: err });
          }
          // The last line may be garbage from a crash mid-append (a file extended, not filled).
          break;
        }
      }
      good += Buffer.byteLength(line) + 1;
    }
    if (good < Buffer.byteLength(text)) {
      this.jlog.warn({ file: this.journalFile, dropped: Buffer.byteLength(text) - good }, 'dropping a torn journal tail');
    }
    if (text.length > 0 && good < Buffer.byteLength(text)) fs.truncateSync(this.journalFile, good);
    this.journalBytes = good;
    // Entries without a document to apply them to cannot be: the first save writes the document.
    if (!this.hasSnapshot && entries.length > 0) {
      throw new MockcloudError('InternalError', `headnode journal ${this.journalFile} has entries but its document is missing`);
    }
    return { snapshot, entries };
  }

  /** Write the whole document and empty the journal (stop: a clean restart replays nothing). */
  override async flush(): Promise<void> {
    this.compactNext = true;
    try {
      await super.flush();
    } finally {
      if (this.fd !== undefined) fs.closeSync(this.fd);
      this.fd = undefined;
    }
  }

  protected override async writeState(): Promise<void> {
    const drained = this.source.drain();
    const compact =
      this.compactNext || drained === 'all' || !this.hasSnapshot || this.journalBytes > Math.max(this.minCompactBytes, this.snapshotBytes);
    if (compact) {
      this.compactNext = false;
      const text = `${JSON.stringify(this.source.snapshot())}\n`;
      if (this.io.writeText) await this.io.writeText(text);
      else await this.io.write(JSON.parse(text) as unknown);
      this.hasSnapshot = true;
      this.snapshotBytes = Buffer.byteLength(text);
      // The document now holds every entry: the journal starts over. A crash before this
      // replays entries the document has already (they are whole records: harmless).
      if (this.journalBytes > 0) {
        const fd = await this.journalFd();
        fs.ftruncateSync(fd, 0);
        await fsyncFd(fd);
        this.journalBytes = 0;
      }
      return;
    }
    if (drained.length === 0) return;
    const text = `${drained.map((e) => JSON.stringify(e)).join('\n')}\n`;
    const fd = await this.journalFd();
    fs.writeSync(fd, text);
    await fsyncFd(fd);
    this.journalBytes += Buffer.byteLength(text);
  }

  private async journalFd(): Promise<number> {
    if (this.fd === undefined) {
      const existed = fs.existsSync(this.journalFile);
      const fd = fs.openSync(this.journalFile, 'a', 0o644);
      // A new journal must survive a crash as a name, not only as data.
      if (!existed) await fsyncDir(path.dirname(this.journalFile));
      this.fd = fd;
    }
    return this.fd;
  }
}

function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
}
