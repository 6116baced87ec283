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
