/**
 * The mock global-zone commands a command_execute script finds on its PATH, each against the
 * output of the SmartOS command it stands for:
 *
 *   vmadm            smartos-live src/vm/sbin/vmadm.js (LIST_FIELDS, DEFAULT_ORDER/SORT,
 *                    outputVMListLine, lookup -j/-1/-o) and src/vm/node_modules/VM.js
 *                    (flatten, lookup's matcher)
 *   sysinfo          smartos-live src/sysinfo (output_json, output_parsable, getopts)
 *   zfs / zpool      illumos zfs(8) / zpool(8) `list` layouts
 *   imgadm           smartos-live src/img/lib/cli.js (do_list, rowFromImageInfo) and tabula
 *   uname            a SmartOS global zone's uname(1)
 */
import { describe, expect, it } from 'vitest';
import { runGzCommand } from '../../src/agents/cn-agent/gz-commands/run.js';
import type { GzDataset, GzSnapshot } from '../../src/agents/cn-agent/gz-commands/types.js';
import { datasetProperties, type Dataset, type ZfsView } from '../../src/agents/cn-agent/zfs/model.js';

const A = 'aaaaaaaa-1111-4111-8111-111111111111';
const B = 'bbbbbbbb-2222-4222-8222-222222222222';
const K = 'cccccccc-3333-4333-8333-333333333333';
const IMG = 'dddddddd-4444-4444-8444-444444444444';
const GiB = 1024 ** 3;

function snapshot(): GzSnapshot {
  return {
    sysinfo: {
      'Live Image': '20250101T000000Z',
      'System Type': 'Virtual',
      'Boot Time': '1735689600',
      'Datacenter Name': 'coal',
      UUID: '564d0b1e-0000-4000-8000-000000000001',
      Hostname: 'cn01',
      'CPU Total Cores': 8,
      'MiB of Memory': '16384',
      'Admin IP': '10.99.99.40',
      'Network Interfaces': {
        e1000g0: { 'MAC Address': '00:0c:29:aa:bb:cc', ip4addr: '10.99.99.40', 'Link Status': 'up', 'NIC Names': ['admin'] },
      },
      'Boot Parameters': { console: 'ttyb' },
    },
    vms: [
      { uuid: B, brand: 'joyent-minimal', alias: 'bravo', state: 'running', autoboot: true, max_physical_memory: 2048, tags: { role: 'db' }, nics: [{ mac: '02:08:20:0a:0b:0c', ip: '10.0.0.2' }] },
      { uuid: A, brand: 'joyent', alias: 'alpha', state: 'stopped', autoboot: false, max_physical_memory: 512, nics: [{ mac: '02:08:20:01:02:03', ip: '10.0.0.1' }] },
      { uuid: K, brand: 'kvm', alias: 'kilo', state: 'running', autoboot: true, ram: 1024, max_physical_memory: 1280 },
    ],
    zfs: {
      pool: { name: 'zones', size: 100 * GiB, allocated: 25 * GiB, free: 75 * GiB, health: 'ONLINE' },
      datasets: withProperties([
        { name: 'zones', type: 'filesystem', used: 25 * GiB, avail: 75 * GiB, refer: 98304, mountpoint: '/zones', creation: 1735689600, quota: 0 },
        { name: `zones/${B}`, type: 'filesystem', used: 1024 ** 2, avail: 10 * GiB, refer: 1024 ** 2, mountpoint: `/zones/${B}`, creation: 1735689700, quota: 10 * GiB, origin: `zones/${IMG}@final` },
        { name: `zones/${B}@snap1`, type: 'snapshot', used: 0, avail: 0, refer: 1024 ** 2, mountpoint: '-', creation: 1735689800, quota: 0 },
        { name: 'zones/cores', type: 'filesystem', used: 0, avail: 75 * GiB, refer: 0, mountpoint: 'none', creation: 1735689600, quota: 0 },
        { name: 'zones/dump', type: 'volume', used: 2 * GiB, avail: 75 * GiB, refer: 2 * GiB, mountpoint: '-', creation: 1735689600, quota: 0, volsize: 2 * GiB },
      ]),
    },
    images: [
      { manifest: { v: 2, uuid: IMG, name: 'base-64-lts', version: '24.4.1', os: 'smartos', type: 'zone-dataset', published_at: '2025-01-02T03:04:05.678Z', files: [{ size: 123 }] }, zpool: 'zones', source: 'https://images.example' },
    ],
  };
}

/**
 * The snapshot's datasets as the task builds them: the model's fields (zfs/model.ts), and each
 * dataset's `zfs get -p` values worked out by the model.
 */
function withProperties(rows: (Pick<Dataset, 'name' | 'type' | 'used' | 'avail' | 'refer' | 'mountpoint' | 'creation' | 'quota'> & Partial<Dataset>)[]): GzDataset[] {
  const datasets: Dataset[] = rows.map((r) => ({ txg: 0, own: false, headType: r.type === 'snapshot' ? 'filesystem' : r.type, local: {}, unique: 0, ...r }));
  const pool = { name: 'zones', size: 100 * GiB, allocated: 25 * GiB, free: 75 * GiB, health: 'ONLINE' };
  const view: ZfsView = { pool, datasets, byName: new Map(datasets.map((d) => [d.name, d])) };
  return datasets.map((d) => ({ ...d, properties: datasetProperties(view, d) }));
}

const run = (command: string, ...args: string[]) => runGzCommand(snapshot(), command, args);

describe('vmadm', () => {
  it('lists uuid, type, ram, state, alias in fixed-width columns sorted by ram, then uuid', () => {
    const r = run('vmadm', 'list');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'UUID                                  TYPE  RAM      STATE             ALIAS',
        `${A}  OS    512      stopped           alpha`,
        `${K}  KVM   1024     running           kilo`,
        `${B}  OS    2048     running           bravo`,
        '',
      ].join('\n'),
    );
  });

  it('list -p / -H / -o / -s and filters', () => {
    expect(run('vmadm', 'list', '-p', '-o', 'uuid,alias,autoboot').stdout).toBe(`${A}:alpha:\n${K}:kilo:true\n${B}:bravo:true\n`);
    expect(run('vmadm', 'list', '-H', '-o', 'alias', '-s', '-alias').stdout).toBe('kilo\nbravo\nalpha\n');
    expect(run('vmadm', 'list', '-Ho', 'alias', 'state=running').stdout).toBe('kilo\nbravo\n');
    expect(run('vmadm', 'list', '-Ho', 'alias,tags.role', 'tags.role=db').stdout).toBe('bravo       db\n');
    expect(run('vmadm', 'list', '-Ho', 'alias', 'nics.*.ip=10.0.0.1').stdout).toBe('alpha\n');
    expect(run('vmadm', 'list', 'nope=1')).toMatchObject({ code: 1, stderr: 'Invalid filter key: "nope"\n' });
    expect(run('vmadm', 'list', '-o', 'bogus')).toMatchObject({ code: 1, stderr: 'invalid order field: bogus\n' });
  });

  it('get prints the VM as JSON, and zoneadm\'s error for an unknown one', () => {
    const r = run('vmadm', 'get', B);
    expect(JSON.parse(r.stdout)).toEqual(snapshot().vms[0]);
    expect(r.stdout).toBe(`${JSON.stringify(snapshot().vms[0], null, 2)}\n`);
    const missing = 'eeeeeeee-5555-4555-8555-555555555555';
    expect(run('vmadm', 'get', missing)).toMatchObject({ code: 1, stderr: `zoneadm: ${missing}: No such zone configured\n` });
    expect(run('vmadm', 'get', 'x')).toMatchObject({ code: 2 });
    expect(run('vmadm', 'get', 'x').stderr).toMatch(/^Invalid or missing UUID for get\nUsage: /);
  });

  it('lookup prints uuids, -j the VMs with their computed fields, -o fields, -1 one or an error', () => {
    expect(run('vmadm', 'lookup', 'alias=~^ALP').stdout).toBe(`${A}\n`);
    const json = JSON.parse(run('vmadm', 'lookup', '-j', 'state=running').stdout) as Record<string, unknown>[];
    expect(json.map((v) => [v.uuid, v.type, v.ram])).toEqual([
      [B, 'OS', 2048],
      [K, 'KVM', 1024],
    ]);
    expect(JSON.parse(run('vmadm', 'lookup', '-j', '-o', 'uuid,type', 'alias=kilo').stdout)).toEqual([{ uuid: K, type: 'KVM' }]);
    expect(run('vmadm', 'lookup', '-1', 'alias=bravo')).toMatchObject({ code: 0, stdout: `${B}\n` });
    expect(run('vmadm', 'lookup', '-1', 'state=running')).toMatchObject({ code: 1, stderr: 'Requested unique lookup but found 2 results.\n' });
    expect(run('vmadm', 'lookup', '-o', 'uuid')).toMatchObject({ code: 1, stderr: 'Cannot specify -o without -j\n' });
    expect(run('vmadm', 'lookup', 'nics.*.mac=2:8:20:a:b:c').stdout).toBe(`${B}\n`);
  });

  it('refuses what would change a VM, and unknown commands with the usage', () => {
    expect(run('vmadm', 'stop', B).code).toBe(1);
    const bad = run('vmadm', 'frobnicate');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^Invalid command: "frobnicate"\.\nUsage: /);
  });
});

describe('sysinfo, uname, hostname, zonename', () => {
  it('sysinfo prints the CN\'s sysinfo as JSON, -p as key=value lines', () => {
    expect(JSON.parse(run('sysinfo').stdout)).toEqual(snapshot().sysinfo);
    const p = run('sysinfo', '-p').stdout.split('\n');
    expect(p.slice(0, 4)).toEqual(["Live_Image='20250101T000000Z'", "System_Type='Virtual'", "Boot_Time='1735689600'", "Datacenter_Name='coal'"]);
    expect(p).toContain("UUID='564d0b1e-0000-4000-8000-000000000001'");
    expect(p).toContain('MiB_of_Memory=16384');
    expect(p).toContain("NIC_admin='e1000g0'");
    expect(p).toContain("Network_Interface_e1000g0_MAC_Address='00:0c:29:aa:bb:cc'");
    expect(p).toContain("Bootparam_console='ttyb'");
    expect(run('sysinfo', '-u')).toEqual({ stdout: '', stderr: '', code: 0 });
    expect(run('sysinfo', '-x')).toMatchObject({ code: 2, stderr: 'Usage: /usr/bin/sysinfo: [-f] [-p] [-u]\n' });
  });

  it('uname answers as SmartOS, with the platform as its version', () => {
    expect(run('uname').stdout).toBe('SunOS\n');
    expect(run('uname', '-v').stdout).toBe('joyent_20250101T000000Z\n');
    expect(run('uname', '-a').stdout).toBe('SunOS cn01 5.11 joyent_20250101T000000Z i86pc i386 i86pc\n');
    expect(run('hostname').stdout).toBe('cn01\n');
    expect(run('zonename').stdout).toBe('global\n');
  });
});

describe('zfs list, zpool list', () => {
  it('zfs list: name, used, avail, refer, mountpoint of filesystems and volumes, numbers right-aligned', () => {
    // Number columns are at least 5 wide (libzfs zprop_width), so "USED" sits right-aligned in 5.
    expect(run('zfs', 'list').stdout).toBe(
      [
        'NAME                                         USED  AVAIL  REFER  MOUNTPOINT',
        'zones                                         25G    75G    96K  /zones',
        `zones/${B}     1M    10G     1M  /zones/${B}`,
        'zones/cores                                     0    75G      0  none',
        'zones/dump                                     2G    75G     2G  -',
        '',
      ].join('\n'),
    );
  });

  it('zfs list -Hp -o, -t snapshot, -r under a dataset, and a missing dataset', () => {
    expect(run('zfs', 'list', '-Hp', '-o', 'name,used,quota', `zones/${B}`).stdout).toBe(`zones/${B}\t1048576\t${10 * GiB}\n`);
    expect(run('zfs', 'list', '-H', '-t', 'snapshot', '-o', 'name').stdout).toBe(`zones/${B}@snap1\n`);
    expect(run('zfs', 'list', '-H', '-r', '-t', 'all', '-o', 'name,origin', `zones/${B}`).stdout).toBe(
      `zones/${B}\tzones/${IMG}@final\nzones/${B}@snap1\t-\n`,
    );
    expect(run('zfs', 'list', '-H', '-o', 'name,quota', 'zones').stdout).toBe('zones\tnone\n');
    expect(run('zfs', 'list', 'zones/nope')).toMatchObject({ code: 1, stdout: '', stderr: "cannot open 'zones/nope': dataset does not exist\n" });
    expect(run('zfs', 'list', '-o', 'bogus').code).toBe(2);
    expect(run('zfs', 'destroy', 'zones/dump').code).toBe(1);
  });

  it('zpool list: the pool with its size, allocation and capacity', () => {
    expect(run('zpool', 'list').stdout).toBe(
      [
        'NAME    SIZE  ALLOC   FREE  CKPOINT  EXPANDSZ   FRAG    CAP  DEDUP    HEALTH  ALTROOT',
        'zones   100G    25G    75G        -         -     0%    25%  1.00x    ONLINE  -',
        '',
      ].join('\n'),
    );
    expect(run('zpool', 'list', '-Hpo', 'name,size,cap').stdout).toBe(`zones\t${100 * GiB}\t25\n`);
    expect(run('zpool', 'list', 'tank')).toMatchObject({ code: 1, stderr: "cannot open 'tank': no such pool\n" });
  });
});

describe('imgadm', () => {
  it('list shows uuid, name, version, os, type, pub; -j the image infos; get one', () => {
    expect(run('imgadm', 'list').stdout).toBe(
      ['UUID                                  NAME         VERSION  OS       TYPE          PUB', `${IMG}  base-64-lts  24.4.1   smartos  zone-dataset  2025-01-02`, ''].join('\n'),
    );
    expect(JSON.parse(run('imgadm', 'list', '-j').stdout)).toEqual(snapshot().images);
    expect(run('imgadm', 'list', '-H', '-o', 'uuid,size', 'os=linux').stdout).toBe('');
    expect(run('imgadm', 'list', '-H', '-o', 'name,size', 'name=~base').stdout).toBe('base-64-lts  123\n');
    expect(JSON.parse(run('imgadm', 'get', IMG).stdout)).toEqual(snapshot().images[0]);
    expect(run('imgadm', 'get', A)).toMatchObject({ code: 1, stderr: `imgadm get: error (ImageNotInstalled): image "${A}" was not found on zpool "zones"\n` });
  });
});
