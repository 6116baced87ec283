/**
 * smf/method/mockcloud-setup, run as SMF would run it but with fake mdata-get, mdata-put, svcs,
 * svcadm, svccfg, zfs, zonename and mockcloud on PATH, in a temp root. What an operator relies
 * on: the daemon's config comes from the zone's mdata, the data lives on the delegated dataset,
 * the daemon service is imported and online before `ensure-servers` runs with the configured
 * number, and running it again (boot, refresh, reprovision) converges without side effects.
 */
import { createRequire } from 'node:module';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/daemon/config.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { makeFakeWorld, type FakeWorld } from './helpers/fake-commands.js';
import { REPO_ROOT, run } from './helpers/run.js';

const netconfig = createRequire(import.meta.url)('triton-netconfig') as {
  adminIpFromNicsArray(nics: unknown[]): string | undefined;
};

const SETUP = path.join(REPO_ROOT, 'smf/method/mockcloud-setup');
const DAEMON_FMRI = 'svc:/triton/application/mockcloud:default';
const ZONE = 'b1a3f0d2-4c5e-4f60-8a7b-9c0d1e2f3a4b';
const ADMIN_UUID = '930896af-bf8c-48d4-885c-6573a94b1853';
// The admin NIC is deliberately not the first: the bind IP must be the admin one.
const NICS = [
  { interface: 'net1', mac: '90:b8:d0:00:00:02', nic_tag: 'external', ip: '198.51.100.20', primary: true },
  { interface: 'net0', mac: '90:b8:d0:00:00:01', nic_tag: 'admin', ip: '10.99.99.40', netmask: '255.255.255.0' },
];

let world: FakeWorld;

async function setUpZone(w: FakeWorld, overrides: Record<string, string | undefined> = {}): Promise<void> {
  const mdata: Record<string, string | undefined> = {
    'sdc:datacenter_name': 'us-test-1',
    dnsDomain: 'example.com',
    'sdc:nics': JSON.stringify(NICS),
    'sdc:alias': 'mockcloud0',
    ufdsAdmin: ADMIN_UUID,
    mockcloudNumServers: '3',
    ...overrides,
  };
  for (const [k, v] of Object.entries(mdata)) await w.setMdata(k, v);
}

function runSetup(w: FakeWorld, extraEnv: NodeJS.ProcessEnv = {}) {
  return run(SETUP, [], {
    env: {
      ...w.env,
      MOCKCLOUD_SETUP_ROOT: w.root,
      MOCKCLOUD_INSTALL_DIR: REPO_ROOT,
      MOCKCLOUD_NODE: process.execPath,
      MOCKCLOUD_SETUP_WAIT_SECONDS: '5',
      MOCKCLOUD_SETUP_POLL_SECONDS: '0.1',
      FAKE_ZONENAME: ZONE,
      ...extraEnv,
    },
    timeoutMs: 30_000,
  });
}

const dataDir = (w: FakeWorld, root = '/data/mockcloud') => path.join(w.root, root);

beforeEach(async () => {
  world = await makeFakeWorld();
  await writeFile(path.join(world.state, 'zfs-mountpoint'), `/zones/${ZONE}/data\n`);
});

afterEach(async () => {
  await world.cleanup();
});

describe('mockcloud-setup on a fresh mockcloud0 zone', () => {
  it('writes the daemon config from mdata, starts the daemon, then ensures mockcloudNumServers CNs', async () => {
    await setUpZone(world);
    const r = await runSetup(world);
    expect(r.stderr).toContain('done');
    expect(r.code, r.stderr).toBe(0);

    // mockcloudRoot defaults to the delegated dataset and is saved for the next boot.
    expect(await world.getMdata('mockcloudRoot')).toBe('/data/mockcloud');
    expect(await world.callsOf('zfs')).toContainEqual(['zfs', 'set', 'mountpoint=/data', `zones/${ZONE}/data`]);

    const configFile = path.join(dataDir(world), 'config.json');
    const config = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({
      datacenterName: 'us-test-1',
      dnsDomain: 'example.com',
      cnapiUrl: 'http://cnapi.us-test-1.example.com',
      vmapiUrl: 'http://vmapi.us-test-1.example.com',
      napiUrl: 'http://napi.us-test-1.example.com',
      imgapiUrl: 'http://imgapi.us-test-1.example.com',
      adminUuid: ADMIN_UUID,
    });
    // The bind IP is the zone's admin IP, as every Triton agent picks it from sdc:nics.
    expect(config.bindIp).toBe(netconfig.adminIpFromNicsArray(NICS));

    // The daemon accepts the file as its config source (no mdata needed any more).
    const resolved = await resolveConfig({ flags: { dataDir: dataDir(world) }, env: {}, mdata: noMdata });
    expect(resolved.urls.cnapi).toBe('http://cnapi.us-test-1.example.com');
    expect(resolved.urls.napi).toBe('http://napi.us-test-1.example.com');
    expect(resolved.bindIp).toBe('10.99.99.40');
    expect(resolved.adminUuid).toBe(ADMIN_UUID);
    expect(resolved.sources.cnapiUrl).toBe('file');

    // The daemon service: imported from our manifest, pointed at the data dir, enabled, online.
    const calls = await world.calls();
    const idx = (pred: (c: string[]) => boolean) => calls.findIndex(pred);
    const importAt = idx((c) => c[0] === 'svccfg' && c[1] === 'import');
    expect(calls[importAt]?.[2]).toBe(path.join(REPO_ROOT, 'smf/manifests/mockcloud.xml'));
    expect(calls).toContainEqual([
      'svccfg', '-s', 'svc:/triton/application/mockcloud', 'setenv', 'MOCKCLOUD_DATA_DIR', dataDir(world),
    ]);
    const enableAt = idx((c) => c[0] === 'svcadm' && c[1] === 'enable' && c.at(-1) === DAEMON_FMRI);
    const ensureAt = idx((c) => c[0] === 'mockcloud');
    expect(await world.svcState(DAEMON_FMRI)).toBe('online');
    expect(importAt).toBeGreaterThanOrEqual(0);
    expect(enableAt).toBeGreaterThan(importAt);
    expect(ensureAt).toBeGreaterThan(enableAt);
    expect(await world.callsOf('mockcloud')).toEqual([
      ['mockcloud', 'ensure-servers', '3', '--data-dir', dataDir(world)],
    ]);
    // No restart of a service that was only just started.
    expect(calls.filter((c) => c[0] === 'svcadm' && c[1] === 'disable')).toEqual([]);
  });

  it('uses mockcloudRoot from mdata when set', async () => {
    await setUpZone(world, { mockcloudRoot: '/data/other' });
    const r = await runSetup(world);
    expect(r.code, r.stderr).toBe(0);
    expect(await world.callsOf('mdata-put')).toEqual([]);
    await stat(path.join(dataDir(world, '/data/other'), 'config.json'));
    expect(await world.callsOf('mockcloud')).toEqual([
      ['mockcloud', 'ensure-servers', '3', '--data-dir', dataDir(world, '/data/other')],
    ]);
  });

  it('leaves the number of CNs alone when mockcloudNumServers is unset', async () => {
    await setUpZone(world, { mockcloudNumServers: undefined });
    const r = await runSetup(world);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/mockcloudNumServers is unset/);
    expect(await world.svcState(DAEMON_FMRI)).toBe('online');
    expect(await world.callsOf('mockcloud')).toEqual([]);
  });
});

describe("mockcloud-setup puts the install's mockcloud on PATH", () => {
  const bin = path.join(REPO_ROOT, 'bin'); // MOCKCLOUD_INSTALL_DIR is the repo here

  /** The PATH a POSIX login shell ends up with after reading the zone's /etc/profile. */
  async function pathAfterProfile(): Promise<string> {
    const r = await run('/bin/sh', ['-c', '. "$1"; printf %s "$PATH"', 'sh', path.join(world.root, 'etc/profile')], {
      env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' },
    });
    expect(r.code, r.stderr).toBe(0);
    return r.stdout;
  }

  it('for every login shell (/etc/profile), root\'s ~/.profile, and zlogin\'s `su root -c` (SUPATH)', async () => {
    await setUpZone(world);
    // What a zone image brings: a profile and su defaults of its own, kept as they are.
    await mkdir(path.join(world.root, 'etc/default'), { recursive: true });
    await writeFile(path.join(world.root, 'etc/profile'), 'umask 022\nexport TZ=UTC\n');
    await writeFile(path.join(world.root, 'etc/default/su'), '#PATH=/usr/bin:\nSUPATH=/usr/sbin:/usr/bin:/opt/local/bin\nSYSLOG=YES\n');
    for (let i = 0; i < 2; i++) expect((await runSetup(world)).code).toBe(0);

    const profile = await readFile(path.join(world.root, 'etc/profile'), 'utf8');
    expect(profile.startsWith('umask 022\nexport TZ=UTC\n')).toBe(true);
    expect(profile.match(/# BEGIN mockcloud/g)).toHaveLength(1);
    expect((await pathAfterProfile()).split(':')).toEqual([bin, '/usr/bin', '/bin']);

    const su = await readFile(path.join(world.root, 'etc/default/su'), 'utf8');
    expect(su).toBe(`#PATH=/usr/bin:\nSUPATH=/usr/sbin:/usr/bin:/opt/local/bin:${bin}\nSYSLOG=YES\n`);

    const dotProfile = await readFile(path.join(world.root, 'root/.profile'), 'utf8');
    expect(dotProfile.split('\n').filter((l) => l.startsWith('export PATH='))).toEqual([
      `export PATH=${bin}:${REPO_ROOT}/build/node/bin:$PATH`,
    ]);
  });

  it('on a zone without those files, writes them; a profile block for another install dir is replaced', async () => {
    await setUpZone(world);
    expect((await runSetup(world)).code).toBe(0);
    expect(await readFile(path.join(world.root, 'etc/default/su'), 'utf8')).toBe(`SUPATH=/usr/sbin:/usr/bin:${bin}\n`);
    expect((await pathAfterProfile()).split(':')[0]).toBe(bin);

    const other = path.join(world.dir, 'other-install');
    await mkdir(path.join(other, 'smf'), { recursive: true });
    const r = await runSetup(world, { MOCKCLOUD_INSTALL_DIR: other });
    // (It fails later, with no manifests there; the profile is set up first.)
    expect(r.stderr).toContain('start');
    const profile = await readFile(path.join(world.root, 'etc/profile'), 'utf8');
    expect(profile.match(/# BEGIN mockcloud/g)).toHaveLength(1);
    expect(profile).toContain(path.join(other, 'bin'));
    expect(profile).not.toContain(`"${bin}:`);
  });
});

describe('mockcloud-setup run again (boot, refresh, reprovision)', () => {
  it('is idempotent: same config file, no re-import, no restart, same ensure-servers', async () => {
    await setUpZone(world);
    expect((await runSetup(world)).code).toBe(0);
    const configFile = path.join(dataDir(world), 'config.json');
    const before = await readFile(configFile, 'utf8');
    const mtimeBefore = (await stat(configFile)).mtimeMs;
    await world.clearCalls();

    const r = await runSetup(world);
    expect(r.code, r.stderr).toBe(0);
    expect(await readFile(configFile, 'utf8')).toBe(before);
    expect((await stat(configFile)).mtimeMs).toBe(mtimeBefore);
    const calls = await world.calls();
    expect(calls.filter((c) => c[0] === 'svccfg')).toEqual([]);
    expect(calls.filter((c) => c[0] === 'svcadm' && c[1] !== 'enable')).toEqual([]);
    expect(calls.filter((c) => c[0] === 'mdata-put' || (c[0] === 'zfs' && c[1] === 'set'))).toEqual([]);
    expect(await world.callsOf('mockcloud')).toEqual([
      ['mockcloud', 'ensure-servers', '3', '--data-dir', dataDir(world)],
    ]);
  });

  it('converges on a changed mockcloudNumServers after a refresh', async () => {
    await setUpZone(world);
    expect((await runSetup(world)).code).toBe(0);
    await world.clearCalls();
    await world.setMdata('mockcloudNumServers', '7');

    const r = await runSetup(world); // `svcadm refresh mockcloud-setup` runs the same method
    expect(r.code, r.stderr).toBe(0);
    expect(await world.callsOf('mockcloud')).toEqual([
      ['mockcloud', 'ensure-servers', '7', '--data-dir', dataDir(world)],
    ]);
    expect((await world.callsOf('svcadm')).filter((c) => c[1] === 'disable')).toEqual([]);
  });

  it('restarts the daemon when its config changes, and keeps keys the operator added', async () => {
    await setUpZone(world);
    expect((await runSetup(world)).code).toBe(0);
    const configFile = path.join(dataDir(world), 'config.json');
    const edited = { ...JSON.parse(await readFile(configFile, 'utf8')), logLevel: 'debug' };
    await writeFile(configFile, `${JSON.stringify(edited, null, 2)}\n`);

    // Only the operator's key differs: nothing to rewrite, nothing to restart.
    await world.clearCalls();
    expect((await runSetup(world)).code).toBe(0);
    expect((await world.callsOf('svcadm')).filter((c) => c[1] === 'disable')).toEqual([]);

    await world.setMdata('dnsDomain', 'new.example.com');
    await world.clearCalls();
    const r = await runSetup(world);
    expect(r.code, r.stderr).toBe(0);
    const config = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
    expect(config.cnapiUrl).toBe('http://cnapi.us-test-1.new.example.com');
    expect(config.logLevel).toBe('debug');
    const svcadm = await world.callsOf('svcadm');
    const disableAt = svcadm.findIndex((c) => c[1] === 'disable' && c.includes('-s') && c.at(-1) === DAEMON_FMRI);
    const enableAt = svcadm.findIndex((c) => c[1] === 'enable');
    expect(disableAt).toBeGreaterThanOrEqual(0);
    expect(enableAt).toBeGreaterThan(disableAt);
    expect(await world.svcState(DAEMON_FMRI)).toBe('online');
  });

  it('replaces an unparseable config.json, keeping the old one aside', async () => {
    await setUpZone(world);
    expect((await runSetup(world)).code).toBe(0);
    const configFile = path.join(dataDir(world), 'config.json');
    await writeFile(configFile, '{"cnapiUrl": "http://cnapi.us-test-1.example.com",,');
    await world.clearCalls();

    const r = await runSetup(world);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/was unusable .* moved to .*config\.json\.invalid-\d+/);
    const config = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
    expect(config.cnapiUrl).toBe('http://cnapi.us-test-1.example.com');
    const aside = (await readdir(dataDir(world))).filter((f) => f.startsWith('config.json.invalid-'));
    expect(aside).toHaveLength(1);
    expect(await readFile(path.join(dataDir(world), aside[0]!), 'utf8')).toContain(',,');
    // The daemon (which could not have read the broken file) is restarted on the good one.
    expect((await world.callsOf('svcadm')).some((c) => c[1] === 'disable')).toBe(true);
  });

  it('points the daemon at a changed mockcloudRoot and restarts it', async () => {
    await setUpZone(world);
    expect((await runSetup(world)).code).toBe(0);
    await world.setMdata('mockcloudRoot', '/data/moved');
    await world.clearCalls();

    const r = await runSetup(world);
    expect(r.code, r.stderr).toBe(0);
    const calls = await world.calls();
    expect(calls).toContainEqual([
      'svccfg', '-s', 'svc:/triton/application/mockcloud', 'setenv', 'MOCKCLOUD_DATA_DIR', dataDir(world, '/data/moved'),
    ]);
    expect(calls.some((c) => c[0] === 'svcadm' && c[1] === 'disable')).toBe(true);
    expect(await world.callsOf('mockcloud')).toEqual([
      ['mockcloud', 'ensure-servers', '3', '--data-dir', dataDir(world, '/data/moved')],
    ]);
  });

  it('after a reprovision (fresh zone root, same /data) re-imports the service and keeps the data', async () => {
    await setUpZone(world);
    expect((await runSetup(world)).code).toBe(0);
    const configFile = path.join(dataDir(world), 'config.json');
    const config = await readFile(configFile, 'utf8');
    const serverDir = path.join(dataDir(world), 'servers', '564d0b8e-4b63-11ee-9c6b-7f3a6c1f0001');
    await mkdir(path.join(serverDir, 'vms'), { recursive: true });
    await writeFile(path.join(serverDir, 'sysinfo.json'), '{"UUID":"564d0b8e-4b63-11ee-9c6b-7f3a6c1f0001"}\n');

    // A reprovision replaces the zone root and its SMF repository; /data and mdata stay.
    for (const d of ['var', 'etc', 'root']) await rm(path.join(world.root, d), { recursive: true, force: true });
    await rm(path.join(world.state, 'svc'), { recursive: true, force: true });
    await mkdir(path.join(world.state, 'svc'));
    await world.clearCalls();

    const r = await runSetup(world);
    expect(r.code, r.stderr).toBe(0);
    expect(await readFile(configFile, 'utf8')).toBe(config);
    await stat(path.join(serverDir, 'sysinfo.json'));
    const calls = await world.calls();
    expect(calls.some((c) => c[0] === 'svccfg' && c[1] === 'import')).toBe(true);
    expect(calls.some((c) => c[0] === 'mdata-put')).toBe(false);
    expect(calls.some((c) => c[0] === 'svcadm' && c[1] === 'disable')).toBe(false);
    expect(await world.svcState(DAEMON_FMRI)).toBe('online');
    expect(await world.callsOf('mockcloud')).toEqual([
      ['mockcloud', 'ensure-servers', '3', '--data-dir', dataDir(world)],
    ]);
  });
});

describe('mockcloud-setup failures are clear and change nothing they should not', () => {
  it('missing dnsDomain: config error (96), no config, no services touched', async () => {
    await setUpZone(world, { dnsDomain: undefined });
    const r = await runSetup(world);
    expect(r.code).toBe(96);
    expect(r.stderr).toMatch(/dnsDomain/);
    await expect(stat(path.join(dataDir(world), 'config.json'))).rejects.toThrow();
    expect((await world.calls()).filter((c) => ['svcadm', 'svccfg', 'mockcloud'].includes(c[0]!))).toEqual([]);
  });

  it('mockcloudNumServers that is not a number: config error (96)', async () => {
    await setUpZone(world, { mockcloudNumServers: 'lots' });
    const r = await runSetup(world);
    expect(r.code).toBe(96);
    expect(r.stderr).toMatch(/mockcloudNumServers='lots'/);
    expect(await world.callsOf('mockcloud')).toEqual([]);
  });

  it('a zone without an admin NIC: config error (96) naming the admin network', async () => {
    await setUpZone(world, { 'sdc:nics': JSON.stringify([NICS[0]]) });
    const r = await runSetup(world);
    expect(r.code).toBe(96);
    expect(r.stderr).toMatch(/admin network/);
    expect(await world.callsOf('svcadm')).toEqual([]);
  });

  it('a daemon in maintenance is cleared once, then setup carries on', async () => {
    await setUpZone(world);
    const r = await runSetup(world, { FAKE_ENABLE_STATE: 'maintenance' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/maintenance/);
    expect((await world.callsOf('svcadm')).filter((c) => c[1] === 'clear')).toEqual([['svcadm', 'clear', DAEMON_FMRI]]);
    expect((await world.callsOf('mockcloud')).length).toBe(1);
  });

  it('a daemon that never comes online: non-zero after the bounded wait, no ensure-servers', async () => {
    await setUpZone(world);
    const r = await runSetup(world, { FAKE_ENABLE_STATE: 'offline', MOCKCLOUD_SETUP_WAIT_SECONDS: '1' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/'offline', not online, after 1s/);
    expect(await world.callsOf('mockcloud')).toEqual([]);
  });

  it('a failing ensure-servers fails the method (the service goes to maintenance, visibly)', async () => {
    await setUpZone(world);
    const r = await runSetup(world, { FAKE_MOCKCLOUD_RC: '3' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/ensure-servers 3 .* failed/);
  });
});
