/**
 * The opt-in watch of one server's vms directory (docs/vmadm.md "Hand edits"): one
 * fs.watch, events for VM files collected and handed over in a batch after a short
 * quiet period. Writes are atomic renames, so every change shows up as a directory event.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from '../common/log.js';
import { vmUuidOfFile } from './vm-file.js';

const DEBOUNCE_MS = 50;

export class VmDirWatch {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly pending = new Set<string>();

  constructor(
    private readonly dir: string,
    private readonly log: Logger,
    private readonly onChange: (uuids: string[]) => void,
  ) {}

  start(): void {
    try {
      this.watcher = watch(this.dir, (_event, name) => {
        const uuid = typeof name === 'string' ? vmUuidOfFile(name) : undefined;
        if (uuid === undefined) return;
        this.pending.add(uuid);
        this.timer ??= setTimeout(() => this.flush(), DEBOUNCE_MS);
      });
      this.watcher.on('error', (err) => this.log.warn({ err, dir: this.dir }, 'VM directory watch failed'));
    } catch (err) {
      this.log.warn({ err, dir: this.dir }, 'cannot watch VM directory; use rescan');
    }
  }

  private flush(): void {
    this.timer = undefined;
    const uuids = [...this.pending];
    this.pending.clear();
    this.onChange(uuids);
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }
}
