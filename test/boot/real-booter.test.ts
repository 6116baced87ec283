/**
 * The oracle (issue 30): the real sdc-booter (`dhcpd`: its lib/dhcpd.js, lib/bootparams.js,
 * lib/admin-pool-cache.js, unchanged) serves the mock CNs' boots, talking to the dev DC's NAPI
 * and CNAPI on loopback. The boot files it writes into its TFTP root are served over HTTP as
 * its zone's nginx serves them.
 *
 * sdc-booter is not an npm package and its code is never part of this repository: the test
 * runs where a checkout of it with its dependencies installed is named by MOCKCLOUD_SDC_BOOTER
 * (docs/boot.md says how to run it; CI has no such checkout, so there it is skipped).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { existsSync, promises as fsp } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { call, closeClient, cnapiClient, napiClient, waitFor, type Client } from '../headnode/helpers/sdc-clients.js';

type Obj = Record<string, any>;

const BOOTER_DIR = process.env.MOCKCLOUD_SDC_BOOTER;
const HAVE_BOOTER = BOOTER_DIR !== undefined && existsSync(path.join(BOOTER_DIR, 'lib', 'dhcpd.js')) && existsSync(path.join(BOOTER_DIR, 'node_modules'));

const TIMINGS = { heartbeatIntervalMs: 500, statusThrottleMs: 200, startSpreadMs: 200, sysinfoBackoff: { minMs: 50, maxMs: 500 } };
const BOOT_TIMINGS = { dhcpTimeoutsMs: [1000, 2000, 4000], retryMinMs: 500, retryMaxMs: 2000, fetchTimeoutMs: 5000 };
const NEW_PLATFORM = '20991231T235959Z';

/** Starts booter's dhcpd as its server.js does, with a config of the test's (no SMF, no SAPI). */
const LAUNCHER = `
const dir = process.argv[2];
const config = JSON.parse(require('fs').readFileSync(process.argv[3], 'utf8'));
const bunyan = require(dir + '/node_modules/bunyan');
const log = bunyan.createLogger({ name: 'dhcpd', level: 'info', stream: process.stdout });
const clients = require(dir + '/lib/clients');
const napi = clients.createNAPIclient(config);
const poolCache = require(dir + '/lib/admin-pool-cache').create({ napi, log, cacheDir: config.poolCache.dir, cacheUpdateIntervalSeconds: config.poolCache.updateIntervalSeconds });
const server = require(dir + '/lib/dhcpd').createServer({ log, config, napi, adminPoolCache: poolCache });
poolCache.update(function (err) { if (err) { log.error(err, 'pool cache'); process.exit(1); } server.start(); });
`;

async function freeUdpPort(): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
  const port = s.address().port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe.skipIf(!HAVE_BOOTER)('the real sdc-booter serves the mock CNs (MOCKCLOUD_SDC_BOOTER)', () => {
  let dataDir: string;
  let tftpRoot: string;
  let booter: ChildProcess;
  let booterLog = '';
  let files: http.Server;
  let daemon: Daemon;
  let cnapi: Client;
  let napi: Client;

  const control = async (p: string, body?: unknown): Promise<Obj> => {
    const res = await fetch(`${daemon.controlAddress.url}${p}`, {
      method: body === undefined ? 'GET' : 'POST',
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    return (await res.json()) as Obj;
  };

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-real-booter-'));
    tftpRoot = path.join(dataDir, 'tftpboot');
    await fsp.mkdir(path.join(tftpRoot, 'cache'), { recursive: true });
    await fsp.mkdir(path.join(tftpRoot, 'poolcache'), { recursive: true });
    // Its zone's nginx: the TFTP root over HTTP.
    files = http.createServer((req, res) => {
      const name = (req.url ?? '').replace(/^\/+/, '');
      if (!/^[A-Za-z0-9._-]+$/.test(name)) return void res.writeHead(404).end();
      fsp.readFile(path.join(tftpRoot, name)).then(
        (body) => res.end(body),
        () => res.writeHead(404).end(),
      );
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));

    // The dev DC first (booter needs its NAPI and CNAPI), its own booter off.
    const port = await freeUdpPort();
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS, bootTimings: BOOT_TIMINGS }));
    const config = await resolveConfig({
      flags: {
        dataDir,
        bindIp: '127.0.0.1',
        cmonPort: 0,
        bootSeconds: 0.2,
        uiAddress: 'none',
        booter: `127.0.0.1:${port}`,
        booterHttpUrl: `http://127.0.0.1:${(files.address() as AddressInfo).port}`,
      },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: createQuietLogger(), embeddedHeadnode: {} });
    await daemon.start();
    cnapi = cnapiClient(daemon.config.urls.cnapi!);
    napi = napiClient(daemon.config.urls.napi!);

    const booterConfig = {
      napi: { url: daemon.config.urls.napi },
      cnapi: { url: daemon.config.urls.cnapi },
      overlay: { enabled: false },
      datacenterName: daemon.config.datacenterName,
      dnsDomain: 'mockcloud.test',
      ipxeHTTP: true,
      disableHash: true,
      adminUuid: DEFAULT_ADMIN_UUID,
      listenIp: '127.0.0.1',
      port,
      tftpRoot,
      defaultGateway: '',
      serverIp: '127.0.0.1',
      leaseTime: 3600,
      resolvers: [],
      netmask: '255.255.0.0',
      cache: { dir: path.join(tftpRoot, 'cache'), refreshIntervalSeconds: 3000, purgeIntervalSeconds: 36000, maxCacheFileAgeSeconds: 604800, refreshConcurrency: 1 },
      poolCache: { updateIntervalSeconds: 60, dir: path.join(tftpRoot, 'poolcache') },
    };
    await fsp.writeFile(path.join(dataDir, 'booter.json'), JSON.stringify(booterConfig));
    await fsp.writeFile(path.join(dataDir, 'launch-booter.js'), LAUNCHER);
    booter = spawn(process.execPath, [path.join(dataDir, 'launch-booter.js'), path.resolve(BOOTER_DIR!), path.join(dataDir, 'booter.json')], { stdio: ['ignore', 'pipe', 'pipe'] });
    booter.stdout!.on('data', (d: Buffer) => (booterLog += d.toString()));
    booter.stderr!.on('data', (d: Buffer) => (booterLog += d.toString()));
    await waitFor(() => booterLog.includes('dhcpd started on'), 20_000);
  }, 60_000);

  afterAll(async () => {
    closeClient(cnapi);
    closeClient(napi);
    await daemon?.stop();
    if (booter && booter.exitCode === null) {
      booter.kill('SIGTERM');
      await new Promise((resolve) => booter.once('exit', resolve));
    }
    files?.close();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it("boots a new CN: booter provisions its admin NIC in the dev NAPI and writes its boot file from the dev CNAPI's default params", async () => {
    const created = (await control('/servers', { count: 1 })).created[0];
    expect(created.adminIp).toMatch(/^10\.99\./);
    const mac = String(daemon.fleet.get(created.uuid)!.sysinfo['Network Interfaces']!.dnet0!['MAC Address']);
    expect(await call<Obj>(napi, 'getNic', mac)).toMatchObject({ ip: created.adminIp, nic_tags_provided: ['admin'] });
    const script = await fsp.readFile(path.join(tftpRoot, `boot.ipxe.01${mac.replace(/:/g, '').toUpperCase()}`), 'utf8');
    const defaults = (await fetch(`${daemon.config.urls.cnapi}/boot/default`).then((r) => r.json())) as Obj;
    expect(script).toContain(`/os/${defaults.platform}/platform/i86pc/kernel/amd64/unix`);
    expect(script).toContain(`admin_nic=${mac}`);
    await waitFor(async () => (await call<Obj>(cnapi, 'getServer', created.uuid)).status === 'running', 20_000);
    const boot = await waitFor(async () => {
      const b = (await control(`/boots?servers=${created.uuid}`)).servers[0];
      return b.phase === 'running' ? b : undefined;
    }, 20_000);
    expect(boot).toMatchObject({ path: 'booter', bootFileFrom: 'booter-http', platform: defaults.platform, ip: created.adminIp });
  }, 60_000);

  it('boots a CN onto the platform assigned in CNAPI, and boots a storm of 20 power-lost CNs', async () => {
    await daemon.growTo(21);
    const headnode = daemon.fleet.headnode();
    const cns = daemon.fleet.list().filter((cn) => cn !== headnode);
    await waitFor(() => cns.every((cn) => cn.registered), 30_000);
    const target = cns[cns.length - 1]!;
    const mac = String(target.sysinfo['Network Interfaces']!.dnet0!['MAC Address']);
    await waitFor(async () => (await call<Obj>(napi, 'getNic', mac)).belongs_to_uuid === target.uuid, 20_000);
    await fsp.mkdir(path.join(dataDir, 'headnode', 'usbkey', 'os', NEW_PLATFORM), { recursive: true });
    await call(cnapi, 'setBootParams', target.uuid, { platform: NEW_PLATFORM });

    const ev = await control('/events', { type: 'power-loss', target: { all: true }, params: { bootMs: 100 } });
    expect(ev.servers).toHaveLength(cns.length);
    const report = await waitFor(async () => {
      const r = await control(`/boots?event=${ev.id}`);
      return r.summary.notBack === 0 && r.summary.boots === cns.length ? r : undefined;
    }, 90_000, 250);
    expect(report.summary.byPath.booter).toBe(cns.length);
    expect(report.servers.find((s: Obj) => s.uuid === target.uuid)).toMatchObject({ platform: NEW_PLATFORM, bootFileFrom: 'booter-http' });
    await waitFor(async () => (await call<Obj>(cnapi, 'getServer', target.uuid)).current_platform === NEW_PLATFORM, 20_000);
  }, 180_000);
});
