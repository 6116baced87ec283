/**
 * The ZFS write tasks over cn-agent's task API, checked through the ZFS query tasks, as
 * CNAPI's (deprecated) ZFS endpoints drive them.
 *
 * Follows sdc-cn-agent lib/backends/smartos/tasks/zfs_*.js (params, finish values, the
 * `failed to ... "<dataset>": <err.message>` failures) over node-zfs lib/zfs.js (each call is
 * one `/sbin/zfs` run through execFile, so a failure reads `Command failed: <command
 * line>\n<stderr>`; rollback runs `zfs rollback -r`; set runs one `zfs set` per property, last
 * key first), with zfs(1M)'s refusals as illumos usr/src/cmd/zfs/zfs_main.c and
 * usr/src/lib/libzfs/common/libzfs_dataset.c word them.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, postTask, provisionParams, type Reply, type TestCn } from './helpers.js';

type Row = { name: string; used: string; avail: string; refer: string; type: string; mountpoint: string };
type Props = Record<string, Record<string, string>>;

/** The error text of a failed `zfs` run as node-zfs (execFile) passes it on. */
function zfsFailed(what: string, args: string, stderr: string): string {
  return `${what}: Command failed: /sbin/zfs ${args}\n${stderr}`;
}

describe('ZFS write tasks', () => {
  let h: Harness;
  let cn: TestCn;
  let vmUuid: string;

  const task = (name: string, params: Record<string, unknown>): Promise<Reply> => postTask(cn, name, params);
  const ok = async (name: string, params: Record<string, unknown>): Promise<unknown> => {
    const r = await task(name, params);
    expect(r.status, `${name} ${JSON.stringify(params)}: ${r.text}`).toBe(200);
    return r.body;
  };
  const failure = async (name: string, params: Record<string, unknown>): Promise<string> => {
    const r = await task(name, params);
    expect(r.status, `${name} ${JSON.stringify(params)}: ${r.text}`).toBe(500);
    return r.body.error as string;
  };
  const names = async (): Promise<string[]> => ((await ok('zfs_list_datasets', {})) as Row[]).map((d) => d.name);
  const props = async (dataset: string, properties?: string[]): Promise<Record<string, string>> => {
    const body = (await ok('zfs_get_properties', { dataset, ...(properties ? { properties } : {}) })) as Props;
    return body[dataset]!;
  };

  beforeAll(async () => {
    h = await Harness.create();
    cn = await h.addCn();
    const params = provisionParams(cn.uuid);
    vmUuid = params.uuid as string;
    await ok('machine_create', params);
    await ok('machine_create_snapshot', { uuid: vmUuid, snapshot_name: 'daily' });
  });

  afterAll(async () => {
    await h.close();
  });

  it('zfs_create_dataset makes a filesystem that the listings, properties and pool space show', async () => {
    const rootBefore = await props('zones', ['used', 'available']);
    // It finishes with nothing (a real agent adds req_id only when the params carry one).
    const { req_id: _reqId, ...finish } = (await ok('zfs_create_dataset', { dataset: 'zones/data' })) as Record<string, unknown>;
    expect(finish).toEqual({});

    const row = ((await ok('zfs_list_datasets', {})) as Row[]).find((d) => d.name === 'zones/data');
    expect(row).toEqual({ name: 'zones/data', used: '23K', avail: expect.any(String), refer: '23K', type: 'filesystem', mountpoint: '/zones/data' });
    const p = await props('zones/data');
    expect(p).toMatchObject({ type: 'filesystem', used: '23552', referenced: '23552', quota: '0', mountpoint: '/zones/data', mounted: 'yes', origin: '-' });
    expect(Number(p.creation)).toBeGreaterThan(Date.now() / 1000 - 60);

    // The pool carries the new bytes: the root's used grows and everyone's available shrinks.
    const rootAfter = await props('zones', ['used', 'available']);
    expect(Number(rootAfter.used) - Number(rootBefore.used)).toBe(23552);
    expect(Number(rootBefore.available) - Number(rootAfter.available)).toBe(23552);
  });

  it('zfs_create_dataset refuses what zfs create refuses, in its words', async () => {
    const what = (ds: string) => `failed to create ZFS dataset "${ds}"`;
    const cases: [unknown, string][] = [
      ['zones/data', "cannot create 'zones/data': dataset already exists\n"],
      ['zones/nope/child', "cannot create 'zones/nope/child': parent does not exist\n"],
      ['zones/bad!name', "cannot create 'zones/bad!name': invalid character '!' in name\n"],
      ['zones/data@snap', "cannot create 'zones/data@snap': snapshot delimiter '@' is not expected here\n"],
      ['zones/trailing/', "cannot create 'zones/trailing/': trailing slash in name\n"],
      ['zones//x', "cannot create 'zones//x': empty component in name\n"],
      ['zones', "cannot create 'zones': missing dataset name\n"],
      ['tank/x', "cannot create 'tank/x': no such pool 'tank'\n"],
      ['zones/swap/x', "cannot create 'zones/swap/x': parent is not a filesystem\n"],
      [undefined, "cannot create 'undefined': missing dataset name\n"],
    ];
    for (const [dataset, stderr] of cases) {
      const ds = String(dataset);
      expect(await failure('zfs_create_dataset', dataset === undefined ? {} : { dataset })).toBe(zfsFailed(what(ds), `create ${ds}`, stderr));
    }
    expect((await names()).filter((n) => n.startsWith('zones/nope') || n.startsWith('tank'))).toEqual([]);
  });

  it('zfs_snapshot_dataset snapshots a dataset; the snapshots list in the order they were taken', async () => {
    await ok('zfs_create_dataset', { dataset: 'zones/data/child' });
    await ok('zfs_snapshot_dataset', { dataset: 'zones/data@one' });
    await ok('zfs_snapshot_dataset', { dataset: 'zones/data@two' });
    const snaps = (await ok('zfs_list_snapshots', { dataset: 'zones/data' })) as Row[];
    expect(snaps.map((s) => s.name)).toEqual(['zones/data@one', 'zones/data@two']);
    expect(snaps[0]).toEqual({ name: 'zones/data@one', used: '0', avail: '-', refer: '23K', type: 'snapshot', mountpoint: '-' });
    // zfs list (zfs_main.c zfs_compare): a dataset, its snapshots by age, then its children.
    const all = await names();
    const at = all.indexOf('zones/data');
    expect(all.slice(at, at + 4)).toEqual(['zones/data', 'zones/data@one', 'zones/data@two', 'zones/data/child']);
    expect((await props('zones/data@one', ['type', 'quota', 'mountpoint'])).type).toBe('snapshot');
  });

  it('zfs_snapshot_dataset refuses an existing snapshot, a missing dataset and a name without @', async () => {
    const what = (ds: string) => `failed to snapshot ZFS dataset "${ds}"`;
    const usage =
      'usage:\n\tsnapshot [-r] [-o property=value] ... <filesystem|volume>@<snap> ...\n' +
      '\nFor the property list, run: zfs set|get\n\nFor the delegated permission list, run: zfs allow|unallow\n';
    expect(await failure('zfs_snapshot_dataset', { dataset: 'zones/data@one' })).toBe(
      zfsFailed(what('zones/data@one'), 'snapshot zones/data@one', "cannot create snapshot 'zones/data@one': dataset already exists\n"),
    );
    expect(await failure('zfs_snapshot_dataset', { dataset: 'zones/gone@x' })).toBe(
      zfsFailed(what('zones/gone@x'), 'snapshot zones/gone@x', `cannot open 'zones/gone': dataset does not exist\n${usage}`),
    );
    expect(await failure('zfs_snapshot_dataset', { dataset: 'zones/data' })).toBe(zfsFailed(what('zones/data'), 'snapshot zones/data', usage));
    expect(await failure('zfs_snapshot_dataset', { dataset: 'zones/data@a@b' })).toBe(
      zfsFailed(what('zones/data@a@b'), 'snapshot zones/data@a@b', "cannot create snapshot 'zones/data@a@b': multiple '@' and/or '#' delimiters in name\n"),
    );
  });

  it('zfs_destroy_dataset refuses a dataset with children or snapshots (no -r), the pool, and datasets in use', async () => {
    const what = (ds: string) => `failed to destroy ZFS dataset "${ds}"`;
    expect(await failure('zfs_destroy_dataset', { dataset: 'zones/data' })).toBe(
      zfsFailed(
        what('zones/data'),
        'destroy zones/data',
        "cannot destroy 'zones/data': filesystem has children\nuse '-r' to destroy the following datasets:\n" +
          'zones/data@one\nzones/data@two\nzones/data/child\n',
      ),
    );
    expect(await failure('zfs_destroy_dataset', { dataset: 'zones' })).toBe(
      zfsFailed(
        what('zones'),
        'destroy zones',
        "cannot destroy 'zones': operation does not apply to pools\n" +
          "use 'zfs destroy -r zones' to destroy all datasets in the pool\nuse 'zpool destroy zones' to destroy the pool itself\n",
      ),
    );
    expect(await failure('zfs_destroy_dataset', { dataset: 'zones/var' })).toBe(
      zfsFailed(what('zones/var'), 'destroy zones/var', "cannot unmount '/var': Device busy\n"),
    );
    // The VM's dataset has its vmadm snapshot below it.
    expect(await failure('zfs_destroy_dataset', { dataset: `zones/${vmUuid}` })).toBe(
      zfsFailed(
        what(`zones/${vmUuid}`),
        `destroy zones/${vmUuid}`,
        `cannot destroy 'zones/${vmUuid}': filesystem has children\nuse '-r' to destroy the following datasets:\nzones/${vmUuid}@vmsnap-daily\n`,
      ),
    );
    expect(await failure('zfs_destroy_dataset', { dataset: 'zones/gone' })).toBe(
      zfsFailed(what('zones/gone'), 'destroy zones/gone', "cannot open 'zones/gone': dataset does not exist\n"),
    );
    expect(await failure('zfs_destroy_dataset', { dataset: 'zones/data@nosuch' })).toBe(
      zfsFailed(what('zones/data@nosuch'), 'destroy zones/data@nosuch', 'could not find any snapshots to destroy; check snapshot names.\n'),
    );
    expect(await names()).toEqual(expect.arrayContaining(['zones/data', 'zones/data@one', 'zones/data/child', 'zones/var']));
  });

  it('zfs_clone_dataset clones a snapshot; the snapshot cannot go while the clone exists', async () => {
    await ok('zfs_clone_dataset', { snapshot: 'zones/data@one', dataset: 'zones/copy' });
    const p = await props('zones/copy', ['type', 'origin', 'referenced', 'mountpoint']);
    expect(p).toEqual({ type: 'filesystem', origin: 'zones/data@one', referenced: '23552', mountpoint: '/zones/copy' });

    const what = 'failed to destroy ZFS dataset "zones/data@one"';
    expect(await failure('zfs_destroy_dataset', { dataset: 'zones/data@one' })).toBe(
      zfsFailed(what, 'destroy zones/data@one', "cannot destroy 'zones/data@one': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\nzones/copy\n"),
    );
    const cloneWhat = (s: string, d: string) => `failed to clone ZFS snapshot "${s}" into dataset "${d}"`;
    expect(await failure('zfs_clone_dataset', { snapshot: 'zones/data@one', dataset: 'zones/copy' })).toBe(
      zfsFailed(cloneWhat('zones/data@one', 'zones/copy'), 'clone zones/data@one zones/copy', "cannot create 'zones/copy': dataset already exists\n"),
    );
    expect(await failure('zfs_clone_dataset', { snapshot: 'zones/data', dataset: 'zones/copy2' })).toBe(
      zfsFailed(cloneWhat('zones/data', 'zones/copy2'), 'clone zones/data zones/copy2', "cannot open 'zones/data': missing '@' delimiter in snapshot name\n"),
    );
    expect(await failure('zfs_clone_dataset', { snapshot: 'zones/data@none', dataset: 'zones/copy2' })).toBe(
      zfsFailed(cloneWhat('zones/data@none', 'zones/copy2'), 'clone zones/data@none zones/copy2', "cannot open 'zones/data@none': dataset does not exist\n"),
    );
  });

  it('a VM dataset (derived from the VM) can be snapshotted and cloned; its snapshots stay in order', async () => {
    await ok('zfs_snapshot_dataset', { dataset: `zones/${vmUuid}@manual` });
    const snaps = (await ok('zfs_list_snapshots', { dataset: `zones/${vmUuid}` })) as Row[];
    expect(snaps.map((s) => s.name)).toEqual([`zones/${vmUuid}@vmsnap-daily`, `zones/${vmUuid}@manual`]);
    await ok('zfs_clone_dataset', { snapshot: `zones/${vmUuid}@manual`, dataset: 'zones/vmcopy' });
    expect((await props('zones/vmcopy', ['origin'])).origin).toBe(`zones/${vmUuid}@manual`);
    await ok('zfs_destroy_dataset', { dataset: 'zones/vmcopy' });
    await ok('zfs_destroy_dataset', { dataset: `zones/${vmUuid}@manual` });
    expect((await names()).filter((n) => n.includes('manual') || n === 'zones/vmcopy')).toEqual([]);
  });

  it('zfs_rollback_dataset rolls back as zfs rollback -r: later snapshots go, unless they were cloned', async () => {
    await ok('zfs_create_dataset', { dataset: 'zones/rb' });
    for (const s of ['a', 'b', 'c']) await ok('zfs_snapshot_dataset', { dataset: `zones/rb@${s}` });
    await ok('zfs_clone_dataset', { snapshot: 'zones/rb@c', dataset: 'zones/rbclone' });

    const what = 'failed to rollback ZFS dataset "zones/rb@a"';
    expect(await failure('zfs_rollback_dataset', { dataset: 'zones/rb@a' })).toBe(
      zfsFailed(
        what,
        'rollback -r zones/rb@a',
        "cannot rollback to 'zones/rb@a': clones of previous snapshots exist\n" +
          "use '-R' to force deletion of the following clones and dependents:\nzones/rbclone\n",
      ),
    );
    expect(((await ok('zfs_list_snapshots', { dataset: 'zones/rb' })) as Row[]).map((s) => s.name)).toEqual(['zones/rb@a', 'zones/rb@b', 'zones/rb@c']);

    await ok('zfs_destroy_dataset', { dataset: 'zones/rbclone' });
    await ok('zfs_rollback_dataset', { dataset: 'zones/rb@a' });
    expect(((await ok('zfs_list_snapshots', { dataset: 'zones/rb' })) as Row[]).map((s) => s.name)).toEqual(['zones/rb@a']);
    // Rolling back to the latest snapshot is always fine.
    await ok('zfs_rollback_dataset', { dataset: 'zones/rb@a' });

    expect(await failure('zfs_rollback_dataset', { dataset: 'zones/rb' })).toBe(
      zfsFailed('failed to rollback ZFS dataset "zones/rb"', 'rollback -r zones/rb', "cannot open 'zones/rb': missing '@' delimiter in snapshot name\n"),
    );
    expect(await failure('zfs_rollback_dataset', { dataset: 'zones/rb@zz' })).toBe(
      zfsFailed('failed to rollback ZFS dataset "zones/rb@zz"', 'rollback -r zones/rb@zz', "cannot open 'zones/rb@zz': dataset does not exist\n"),
    );
  });

  it('zfs_rename_dataset moves a dataset with its children and snapshots; clones keep their origin', async () => {
    await ok('zfs_rename_dataset', { dataset: 'zones/data', newname: 'zones/moved' });
    const all = await names();
    expect(all).toEqual(expect.arrayContaining(['zones/moved', 'zones/moved/child', 'zones/moved@one', 'zones/moved@two']));
    expect(all.filter((n) => n.startsWith('zones/data'))).toEqual([]);
    expect((await props('zones/moved/child', ['mountpoint'])).mountpoint).toBe('/zones/moved/child');
    expect((await props('zones/copy', ['origin'])).origin).toBe('zones/moved@one');

    // A snapshot is renamed within its dataset, by full or short name.
    await ok('zfs_rename_dataset', { dataset: 'zones/moved@two', newname: 'second' });
    await ok('zfs_rename_dataset', { dataset: 'zones/moved@one', newname: 'zones/moved@first' });
    expect(((await ok('zfs_list_snapshots', { dataset: 'zones/moved' })) as Row[]).map((s) => s.name)).toEqual(['zones/moved@first', 'zones/moved@second']);
    expect((await props('zones/copy', ['origin'])).origin).toBe('zones/moved@first');

    const what = (a: string, b: string) => `failed to rename ZFS dataset "${a}" to "${b}"`;
    const cases: [string, string, string][] = [
      ['zones/moved', 'zones/copy', "cannot rename 'zones/moved': dataset already exists\n"],
      ['zones/moved', 'zones/moved/inside', "cannot rename to 'zones/moved/inside': New dataset name cannot be a descendant of current dataset name\n"],
      ['zones/moved', 'zones/no/where', "cannot create 'zones/no/where': parent does not exist\n"],
      ['zones/moved', 'tank/moved', "cannot create 'tank/moved': no such pool 'tank'\n"],
      ['zones/moved@first', 'zones/copy@first', "cannot rename to 'zones/copy@first': snapshots must be part of same dataset\n"],
      ['zones/moved', 'zones/x@y', "cannot rename to 'zones/x@y': snapshot delimiter '@' is not expected here\n"],
      ['zones/opt', 'zones/opt2', "cannot unmount '/opt': Device busy\n"],
      ['zones/gone', 'zones/gone2', "cannot open 'zones/gone': dataset does not exist\n"],
    ];
    for (const [a, b, stderr] of cases) {
      expect(await failure('zfs_rename_dataset', { dataset: a, newname: b })).toBe(zfsFailed(what(a, b), `rename ${a} ${b}`, stderr));
    }
  });

  it('zfs_set_properties sets what zfs get then shows: sizes in bytes, inheritance, user properties', async () => {
    await ok('zfs_set_properties', { dataset: 'zones/moved', properties: { quota: '5G', compression: 'lz4', 'com.example:owner': 'ops' } });
    const p = await props('zones/moved');
    expect(p).toMatchObject({ quota: '5368709120', compression: 'lz4', 'com.example:owner': 'ops' });
    expect(Number(p.available)).toBeLessThanOrEqual(5 * 1024 ** 3 - Number(p.used));
    // compression and user properties pass down; the quota bounds the children.
    const child = await props('zones/moved/child', ['compression', 'quota', 'available', 'com.example:owner']);
    expect(child).toMatchObject({ compression: 'lz4', quota: '0', 'com.example:owner': 'ops' });
    expect(Number(child.available)).toBeLessThanOrEqual(5 * 1024 ** 3);
    const row = ((await ok('zfs_list_datasets', {})) as Row[]).find((d) => d.name === 'zones/moved/child');
    expect(row!.avail).toMatch(/^5\.00G$|^4\.\d+G$/);

    await ok('zfs_set_properties', { dataset: 'zones/moved', properties: { quota: 'none', mountpoint: '/data' } });
    expect(await props('zones/moved', ['quota', 'mountpoint'])).toEqual({ quota: '0', mountpoint: '/data' });
    expect((await props('zones/moved/child', ['mountpoint'])).mountpoint).toBe('/data/child');
    // Derived datasets take properties too (the VM's quota, here).
    await ok('zfs_set_properties', { dataset: `zones/${vmUuid}`, properties: { quota: '20G' } });
    expect((await props(`zones/${vmUuid}`, ['quota'])).quota).toBe(String(20 * 1024 ** 3));
  });

  it('zfs_set_properties refuses as zfs set does, one property at a time, last key first', async () => {
    const what = 'failed to set ZFS properties for dataset "zones/moved"';
    const refused = (assignment: string, reason: string) =>
      zfsFailed(what, `set ${assignment} zones/moved`, `cannot set property for 'zones/moved': ${reason}\n`);
    const cases: [Record<string, unknown>, string][] = [
      [{ quota: 'lots' }, refused('quota=lots', "bad numeric value 'lots'")],
      [{ quota: '5X' }, refused('quota=5X', "invalid numeric suffix 'X'")],
      [{ quota: 0 }, refused('quota=0', "use 'none' to disable quota/refquota")],
      [{ quota: '1K' }, refused('quota=1K', 'size is less than current used or reserved space')],
      [{ used: '1' }, refused('used=1', "'used' is readonly")],
      [{ bogus: 'x' }, refused('bogus=x', "invalid property 'bogus'")],
      [{ compression: 'fast' }, refused('compression=fast', "'compression' must be one of 'on | off | lzjb | gzip | gzip-[1-9] | zle | lz4'")],
      [{ mountpoint: 'relative' }, refused('mountpoint=relative', "'mountpoint' must be an absolute path, 'none', or 'legacy'")],
      [{ volsize: '1G' }, refused('volsize=1G', "'volsize' does not apply to datasets of this type")],
    ];
    for (const [properties, message] of cases) {
      expect(await failure('zfs_set_properties', { dataset: 'zones/moved', properties })).toBe(message);
    }
    expect(await failure('zfs_set_properties', { dataset: 'zones/moved@first', properties: { compression: 'on' } })).toBe(
      zfsFailed('failed to set ZFS properties for dataset "zones/moved@first"', 'set compression=on zones/moved@first', "cannot set property for 'zones/moved@first': this property can not be modified for snapshots\n"),
    );
    expect(await failure('zfs_set_properties', { dataset: 'zones/gone', properties: { quota: '1G' } })).toBe(
      zfsFailed('failed to set ZFS properties for dataset "zones/gone"', 'set quota=1G zones/gone', "cannot open 'zones/gone': dataset does not exist\n"),
    );

    // node-zfs sets the last key first and stops at the first refusal; what it set stays set.
    expect(await failure('zfs_set_properties', { dataset: 'zones/moved', properties: { compression: 'gzip', quota: 'bad' } })).toBe(
      refused('quota=bad', "bad numeric value 'bad'"),
    );
    expect((await props('zones/moved', ['compression'])).compression).toBe('lz4');
    expect(await failure('zfs_set_properties', { dataset: 'zones/moved', properties: { quota: 'bad', compression: 'gzip' } })).toBe(
      refused('quota=bad', "bad numeric value 'bad'"),
    );
    expect((await props('zones/moved', ['compression'])).compression).toBe('gzip');
  });

  it('zfs_destroy_dataset removes a snapshot, then the emptied dataset, and gives the space back', async () => {
    const before = Number((await props('zones', ['used'])).used);
    await ok('zfs_destroy_dataset', { dataset: 'zones/copy' });
    await ok('zfs_destroy_dataset', { dataset: 'zones/moved@first' });
    await ok('zfs_destroy_dataset', { dataset: 'zones/moved@second' });
    await ok('zfs_destroy_dataset', { dataset: 'zones/moved/child' });
    await ok('zfs_destroy_dataset', { dataset: 'zones/moved' });
    expect((await names()).filter((n) => n.startsWith('zones/moved') || n === 'zones/copy')).toEqual([]);
    // The clone held nothing of its own; the two filesystems 23K each.
    expect(before - Number((await props('zones', ['used'])).used)).toBe(2 * 23552);
  });

  it('keeps the changes in the CN\'s zfs.json and reads them back when the CN comes back', async () => {
    await ok('zfs_create_dataset', { dataset: 'zones/kept' });
    await ok('zfs_snapshot_dataset', { dataset: 'zones/kept@s1' });
    await ok('zfs_set_properties', { dataset: 'zones/kept', properties: { quota: '2G' } });
    const file = path.join(cn.cn.paths.dir, 'zfs.json');
    expect(JSON.parse(await fsp.readFile(file, 'utf8')).datasets['zones/kept@s1'].type).toBe('snapshot');

    // Detach and attach again: the CN's task state starts empty and is read from the file.
    await h.server.detach(cn.uuid);
    const address = await h.server.attach(cn.cn);
    cn.cn.registered = true;
    cn = { ...cn, url: `http://${address.ip}:${address.port}` };
    expect(await names()).toEqual(expect.arrayContaining(['zones/kept', 'zones/kept@s1', 'zones/rb', 'zones/rb@a']));
    expect((await props('zones/kept', ['quota'])).quota).toBe(String(2 * 1024 ** 3));
  });

  it('sets an unreadable zfs.json aside and starts from the derived datasets', async () => {
    const c = await h.addCn();
    await fsp.writeFile(path.join(c.cn.paths.dir, 'zfs.json'), '{"v": 1, "datasets": ');
    const r = await postTask(c, 'zfs_list_datasets', {});
    expect(r.status).toBe(200);
    expect((r.body as Row[]).map((d) => d.name)).toContain('zones/var');
    const entries = await fsp.readdir(c.cn.paths.dir);
    expect(entries.some((e) => e.startsWith('.zfs.json.bad-'))).toBe(true);
    expect((await postTask(c, 'zfs_create_dataset', { dataset: 'zones/fresh' })).status).toBe(200);
  });
});
