/**
 * Profile files as an operator writes them: YAML or JSON, one profile or a list, extending a
 * built-in; and every mistake reported with the file and the line it is on, before the daemon
 * starts anything.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { loadProfileFiles, parseProfileFile } from '../../src/mockcn/profile-files.js';
import { getProfile } from '../../src/mockcn/profiles.js';

describe('profile files', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await fsp.rm(d, { recursive: true, force: true });
  });
  async function dirWith(files: Record<string, string>): Promise<string> {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-profiles-'));
    dirs.push(dir);
    for (const [name, text] of Object.entries(files)) await fsp.writeFile(path.join(dir, name), text);
    return dir;
  }

  it('reads YAML and JSON files, one profile or a list, each extending a built-in or an earlier profile', async () => {
    const dir = await dirWith({
      'a.yaml': 'name: tiny\nextends: small\nmemoryMiB: 8192\nreserved: true\n',
      'b.json': JSON.stringify({ profiles: [{ name: 'tiny-ssd', extends: 'tiny', traits: { ssd: true } }, { name: 'plain', diskCount: 2 }] }, null, 2),
      'notes.txt': 'not a profile file',
    });
    const profiles = await loadProfileFiles(dir, true);
    expect(profiles.map((p) => p.name)).toEqual(['tiny', 'tiny-ssd', 'plain']);
    const [tiny, tinySsd, plain] = profiles;
    expect(tiny).toMatchObject({ memoryMiB: 8192, cpuCoreCount: getProfile('small').cpuCoreCount, placement: { reserved: true } });
    expect(tiny!.source).toBe(`${path.join(dir, 'a.yaml')}:1`);
    // An extension keeps its base's placement and adds its own.
    expect(tinySsd).toMatchObject({ memoryMiB: 8192, placement: { reserved: true, traits: { ssd: true } } });
    expect(plain).toMatchObject({ diskCount: 2, cpuCoreCount: getProfile('virtual').cpuCoreCount });
    expect(plain!.placement).toBeUndefined();
    expect(await loadProfileFiles(path.join(dir, 'absent'), false)).toEqual([]);
    await expect(loadProfileFiles(path.join(dir, 'absent'), true)).rejects.toThrow(/cannot read the profiles dir/);
  });

  it('refuses a profile file over 1 MiB by name; a good file beside it is no error', async () => {
    const dir = await dirWith({ 'a.yaml': 'name: fine\n', 'b.yaml': `name: padded\n# ${'x'.repeat(1024 * 1024)}\n` });
    const err = await loadProfileFiles(dir, true).catch((e: Error) => e);
    expect((err as Error).message).toContain(`${path.join(dir, 'b.yaml')} is over 1 MiB: too large for a profile file`);
    expect((err as Error).message).not.toContain('a.yaml');
  });

  it('names the file and the line of each mistake', () => {
    const errorsOf = (text: string): string[] => parseProfileFile('p.yaml', text).errors;
    expect(errorsOf('name: a\ncores: 4\n')).toEqual([expect.stringMatching(/^p\.yaml:2: unknown key "cores"; known: name, extends/)]);
    expect(errorsOf('name: a\n\nmemoryMiB: lots\n')).toEqual(['p.yaml:3: memoryMiB must be a whole number ≥ 1']);
    expect(errorsOf('name: a\nnics: [{tags: [external]}, {tags: 5}]\n')[0]).toMatch(/^p\.yaml:2: nics must be a list/);
    expect(errorsOf('name: a\nextends: huge\n')[0]).toMatch(/^p\.yaml:2: extends "huge", which is no built-in or earlier profile/);
    expect(errorsOf('description: no name\n')).toEqual(['p.yaml:1: a profile needs a name']);
    expect(errorsOf('name: a\ncpuPhysicalCores: 3\n')[0]).toMatch(/^p\.yaml:1: cpuCoreCount 16 is not a multiple of cpuPhysicalCores \(sockets\) 3/);
    expect(errorsOf('name: a\nbhyveMaxVcpus: 64\n')).toEqual(['p.yaml:2: bhyveMaxVcpus 64 is above cpuTotalCores 32']);
    expect(errorsOf('profiles:\n  - name: a\n  - name: b\n    reserved: maybe\n')).toEqual(['p.yaml:4: reserved must be true or false']);
    // YAML syntax: the parser's message at its line.
    expect(errorsOf('name: a\nnics: [\n  {tags: [x]\n')[0]).toMatch(/^p\.yaml:[2-4]: .*(indented|end with)/);
    expect(errorsOf('- just\n- a list\n')[0]).toMatch(/^p\.yaml:1: a profile file holds a mapping/);
    expect(parseProfileFile('p.json', '{\n  "name": "a",\n  "diskCount": -1\n}\n').errors).toEqual(['p.json:3: diskCount must be a whole number ≥ 1']);
  });

  it('refuses two profiles of one name, and stops the daemon starting with every error, by file and line', async () => {
    const dir = await dirWith({
      '1.yaml': 'name: twin\n',
      '2.yaml': '# the same again\nname: twin\n',
      '3.yml': 'name: broken\nmemoryMiB: -5\n',
    });
    const err = await loadProfileFiles(dir, true).catch((e: Error) => e);
    expect((err as Error).message).toContain(`${path.join(dir, '2.yaml')}:2: profile twin is defined twice (also at ${path.join(dir, '1.yaml')}:1)`);
    expect((err as Error).message).toContain(`${path.join(dir, '3.yml')}:2: memoryMiB must be a whole number ≥ 1`);

    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-profiles-daemon-'));
    dirs.push(dataDir);
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0, profilesDir: dir }, env: {}, mdata: noMdata });
    const daemon = new Daemon({ config, log: createQuietLogger('profile-files-test'), plugins: [] });
    await expect(daemon.start()).rejects.toThrow(/bad profile files:[\s\S]*3\.yml:2: memoryMiB/);
    expect(daemon.state).toBe('stopped');
  });
});
