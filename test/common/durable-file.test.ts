import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fsyncDir, isDurableTempName, unlinkDurable, writeFileDurable } from '../../src/common/durable-file.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mockcloud-durable-'));
});
afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('writeFileDurable', () => {
  it('replaces the target with the new content and leaves no temp file', async () => {
    const file = path.join(dir, 'vm.json');
    await writeFileDurable(file, 'one');
    await writeFileDurable(file, 'two');
    expect(fs.readFileSync(file, 'utf8')).toBe('two');
    expect(fs.readdirSync(dir)).toEqual(['vm.json']);
  });

  it('sets the mtime it is given before publishing the file', async () => {
    const file = path.join(dir, 'vm.json');
    const when = new Date('2026-01-02T03:04:05.678Z');
    await writeFileDurable(file, '{}', { mtime: when });
    expect(Math.round(fs.statSync(file).mtimeMs)).toBe(when.getTime());
  });

  it('fails without touching the old file when the directory is gone', async () => {
    const gone = path.join(dir, 'missing', 'vm.json');
    await expect(writeFileDurable(gone, 'x')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('unlinkDurable removes the file and reports a missing one', async () => {
    const file = path.join(dir, 'vm.json');
    await writeFileDurable(file, 'x');
    await unlinkDurable(file);
    expect(fs.existsSync(file)).toBe(false);
    await expect(unlinkDurable(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('names temp files so scanners skip them', () => {
    expect(isDurableTempName('.vm.json.123.abcdef.tmp')).toBe(true);
    expect(isDurableTempName('vm.json')).toBe(false);
  });
});

describe('fsyncDir', () => {
  it('folds concurrent requests into at most two syncs, each caller covered by one that started after it asked', async () => {
    const opened: string[] = [];
    const realOpen = fs.openSync;
    vi.spyOn(fs, 'openSync').mockImplementation(((p: fs.PathLike, flags: fs.OpenMode, mode?: fs.Mode) => {
      if (p === dir) opened.push(String(p));
      return realOpen(p, flags, mode);
    }) as typeof fs.openSync);
    const first = fsyncDir(dir);
    const rest = Array.from({ length: 20 }, () => fsyncDir(dir));
    await Promise.all([first, ...rest]);
    // the first sync, then one more shared by the 20 that asked while it ran
    expect(opened.length).toBe(2);
    await fsyncDir(dir);
    expect(opened.length).toBe(3);
  });

  it('rejects for a directory that does not exist', async () => {
    await expect(fsyncDir(path.join(dir, 'nope'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
