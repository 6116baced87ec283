/**
 * The headnode's persistence (src/headnode/store.ts): named JSON documents under
 * `<data-dir>/headnode/`, durable saves that resolve only once the state is on disk,
 * group commit of concurrent saves, delayed saves, flush, and refusing a damaged document.
 */
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { waitFor } from './helpers/sdc-clients.js';

describe('headnode store', () => {
  let dir: string;
  let store: HeadnodeStore;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-store-'));
    store = new HeadnodeStore({ dataDir: dir, log: createQuietLogger() });
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const onDisk = async (name: string): Promise<unknown> =>
    JSON.parse(await readFile(path.join(dir, 'headnode', `${name}.json`), 'utf8'));

  it('has no document on first start, and a saved one is on disk when save() resolves', async () => {
    let state = { n: 1 };
    const doc = store.document('things', () => state);
    expect(await doc.load()).toBeUndefined();
    await doc.save();
    expect(await onDisk('things')).toEqual({ n: 1 });
    state = { n: 2 };
    await doc.save();
    expect(await onDisk('things')).toEqual({ n: 2 });

    const again = new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).document('things', () => ({}));
    expect(await again.load()).toEqual({ n: 2 });
  });

  it('group-commits concurrent saves, and each caller sees its own change durable', async () => {
    const state = { n: 0 };
    let writes = 0;
    const doc = store.document('burst', () => {
      writes++;
      return { ...state };
    });
    const saves: Promise<void>[] = [];
    const seen: number[] = [];
    for (let i = 1; i <= 50; i++) {
      state.n = i;
      const mine = i;
      saves.push(doc.save().then(async () => {
        const stored = (await onDisk('burst')) as { n: number };
        seen.push(stored.n >= mine ? 1 : 0);
      }));
    }
    await Promise.all(saves);
    expect(seen.every((s) => s === 1)).toBe(true);
    expect(await onDisk('burst')).toEqual({ n: 50 });
    expect(writes).toBeLessThan(50);
    expect(writes).toBeGreaterThanOrEqual(1);
  });

  it('saveSoon() writes later; flush() writes what is pending and stops further lazy saves', async () => {
    const state = { v: 'a' };
    const doc = store.document('lazy', () => ({ ...state }), { lazyDelayMs: 20 });
    doc.saveSoon();
    expect(await waitFor(() => onDisk('lazy'), 5000)).toEqual({ v: 'a' });

    state.v = 'b';
    doc.saveSoon();
    await doc.flush();
    expect(await onDisk('lazy')).toEqual({ v: 'b' });

    state.v = 'c';
    doc.saveSoon();
    await new Promise((r) => setTimeout(r, 100));
    expect(await onDisk('lazy')).toEqual({ v: 'b' });
  });

  it('leaves no temp files behind and refuses a damaged document instead of starting fresh', async () => {
    const doc = store.document('solid', () => ({ ok: true }));
    await Promise.all([doc.save(), doc.save(), doc.save()]);
    expect((await readdir(path.join(dir, 'headnode'))).sort()).toEqual(['solid.json']);

    await mkdir(path.join(dir, 'headnode'), { recursive: true });
    await writeFile(path.join(dir, 'headnode', 'broken.json'), '{"half":');
    await expect(store.document('broken', () => ({})).load()).rejects.toThrow(/not valid JSON/);
  });

  it('rejects document names that are not plain file names', () => {
    expect(() => store.document('../escape', () => ({}))).toThrow(/invalid headnode document name/);
    expect(() => store.document('a/b', () => ({}))).toThrow(/invalid headnode document name/);
  });

  it('a failed snapshot rejects that save, and the next save still works', async () => {
    let fail = true;
    const doc = store.document('flaky', () => {
      if (fail) throw new Error('snapshot broke');
      return { fine: true };
    });
    await expect(doc.save()).rejects.toThrow('snapshot broke');
    fail = false;
    await doc.save();
    expect(await onDisk('flaky')).toEqual({ fine: true });
  });
});

/**
 * Journaled documents: a save appends the records that changed (one line each) instead of
 * rewriting every record; a load applies them after the document; a torn last line (a crash
 * mid-append, never acknowledged) is dropped; the whole document is rewritten when the journal
 * outgrows it, on a structural change, and at flush.
 */
describe('headnode store, journaled documents', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-journal-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A keyed state with a journal of `{k, v}` entries, as NAPI's and CNAPI's are. */
  function keyed(): { map: Map<string, number>; changed: Set<string>; structural: boolean; source: import('../../src/headnode/store.js').JournalSource } {
    const st = {
      map: new Map<string, number>(),
      changed: new Set<string>(),
      structural: false,
      source: {
        snapshot: () => Object.fromEntries(st.map),
        drain: (): unknown[] | 'all' => {
          if (st.structural) {
            st.structural = false;
            st.changed.clear();
            return 'all';
          }
          const out = [...st.changed].map((k) => ({ k, v: st.map.get(k) ?? null }));
          st.changed.clear();
          return out;
        },
      },
    };
    return st;
  }
  const set = (st: ReturnType<typeof keyed>, k: string, v: number | null): void => {
    if (v === null) st.map.delete(k);
    else st.map.set(k, v);
    st.changed.add(k);
  };
  const file = (name: string): string => path.join(dir, 'headnode', name);

  it('appends changed records to the journal; a load gives the document and the entries in order', async () => {
    const st = keyed();
    const doc = new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).journaled('things', st.source);
    expect(await doc.loadJournaled()).toEqual({ snapshot: undefined, entries: [] });
    set(st, 'a', 1);
    await doc.save(); // the first save writes the document
    expect(JSON.parse(await readFile(file('things.json'), 'utf8'))).toEqual({ a: 1 });
    const docText = await readFile(file('things.json'), 'utf8');
    set(st, 'b', 2);
    await doc.save();
    set(st, 'a', 3);
    set(st, 'b', null);
    await doc.save();
    // The document was not rewritten; the journal holds the changes.
    expect(await readFile(file('things.json'), 'utf8')).toBe(docText);
    expect((await readFile(file('things.journal'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l))).toEqual([
      { k: 'b', v: 2 },
      { k: 'a', v: 3 },
      { k: 'b', v: null },
    ]);
    // A crash now: a new process loads the document and the journal.
    const after = await new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).journaled('things', keyed().source).loadJournaled();
    expect(after).toEqual({ snapshot: { a: 1 }, entries: [{ k: 'b', v: 2 }, { k: 'a', v: 3 }, { k: 'b', v: null }] });
  });

  it('drops a torn last line (and cuts it off, so the next append starts a line of its own); refuses damage before it', async () => {
    const st = keyed();
    const doc = new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).journaled('things', st.source);
    await doc.loadJournaled();
    set(st, 'a', 1);
    await doc.save();
    set(st, 'b', 2);
    await doc.save();
    await writeFile(file('things.journal'), `${await readFile(file('things.journal'), 'utf8')}{"k":"c","v`);
    const st2 = keyed();
    const doc2 = new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).journaled('things', st2.source);
    expect((await doc2.loadJournaled()).entries).toEqual([{ k: 'b', v: 2 }]);
    set(st2, 'd', 4);
    await doc2.save();
    expect(await readFile(file('things.journal'), 'utf8')).toBe('{"k":"b","v":2}\n{"k":"d","v":4}\n');
    // Garbage before the last line is damage from outside: no silent start from less.
    await writeFile(file('things.journal'), 'nonsense\n{"k":"b","v":2}\n');
    await expect(new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).journaled('things', keyed().source).loadJournaled()).rejects.toThrow(
      /damaged at line 1/,
    );
  });

  it('rewrites the whole document when the journal outgrows it, on a structural change, and at flush', async () => {
    const st = keyed();
    const doc = new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).journaled('things', st.source, { minCompactBytes: 200 });
    await doc.loadJournaled();
    set(st, 'a', 1);
    await doc.save();
    for (let i = 0; i < 40; i++) {
      set(st, `k${i}`, i);
      await doc.save();
    }
    // 40 entries of ~15 bytes outgrew both the 200-byte floor and the document: compacted on the way.
    const journal = await readFile(file('things.journal'), 'utf8');
    expect(journal.length).toBeLessThan(40 * 15);
    const loaded = await new HeadnodeStore({ dataDir: dir, log: createQuietLogger() }).journaled('things', keyed().source).loadJournaled();
    const replayed = { ...(loaded.snapshot as Record<string, number>) };
    for (const e of loaded.entries as { k: string; v: number | null }[]) {
      if (e.v === null) delete replayed[e.k];
      else replayed[e.k] = e.v;
    }
    expect(replayed).toEqual(Object.fromEntries(st.map));

    st.structural = true;
    await doc.save();
    expect(await readFile(file('things.journal'), 'utf8')).toBe('');
    set(st, 'z', 26);
    await doc.save();
    await doc.flush();
    expect(await readFile(file('things.journal'), 'utf8')).toBe('');
    expect(JSON.parse(await readFile(file('things.json'), 'utf8'))).toEqual(Object.fromEntries(st.map));
  });
});
