/**
 * One CN's firewall state as fwadm keeps it in /var/fw (rules/<uuid>.json, vms/<uuid>.json):
 * the rules and the remote VMs, in one file per CN, `<server dir>/fw/state.json`, written
 * durably after each change (coalesced: one write at a time, the last state wins). A file that
 * cannot be read back is set aside and the CN starts empty: the start-up sync rebuilds it from
 * FWAPI and VMAPI.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { mkdirBelow, writeFileDurable } from '../../common/durable-file.js';
import type { RemoteVm, RuleData } from './rules.js';

interface StateFile {
  version: 1;
  rules: RuleData[];
  rvms: RemoteVm[];
}

export class FwStore {
  readonly rules = new Map<string, RuleData>();
  readonly rvms = new Map<string, RemoteVm>();
  private writing: Promise<void> | undefined;
  private dirty = false;

  constructor(readonly file: string) {}

  static fileOf(serverDir: string): string {
    return path.join(serverDir, 'fw', 'state.json');
  }

  /** 'ok', 'none' (no file: a new CN) or 'corrupt' (set aside as state.json.corrupt-<time>). */
  async load(): Promise<'ok' | 'none' | 'corrupt'> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'none';
      throw err;
    }
    try {
      const doc = JSON.parse(text) as StateFile;
      if (doc.version !== 1 || !Array.isArray(doc.rules) || !Array.isArray(doc.rvms)) throw new Error('not a version 1 state');
      for (const r of doc.rules) if (r && typeof r.uuid === 'string') this.rules.set(r.uuid, r);
      for (const v of doc.rvms) if (v && typeof v.uuid === 'string') this.rvms.set(v.uuid, v);
      return 'ok';
    } catch {
      this.rules.clear();
      this.rvms.clear();
      await fsp.rename(this.file, `${this.file}.corrupt-${Date.now()}`).catch(() => undefined);
      return 'corrupt';
    }
  }

  /** Persist the current state; resolves once it (or a later one) is on disk. */
  save(): Promise<void> {
    this.dirty = true;
    if (this.writing) return this.writing.then(() => (this.dirty ? this.save() : undefined));
    this.dirty = false;
    const doc: StateFile = { version: 1, rules: [...this.rules.values()], rvms: [...this.rvms.values()] };
    // Below the CN's directory only: a save racing the CN's removal fails, it does not bring the directory back.
    this.writing = mkdirBelow(path.dirname(path.dirname(this.file)), path.dirname(this.file))
      .then(() => writeFileDurable(this.file, `${JSON.stringify(doc)}\n`))
      .finally(() => {
        this.writing = undefined;
      });
    return this.writing;
  }
}
