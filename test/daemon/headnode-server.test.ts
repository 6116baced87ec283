/**
 * The dev DC's headnode server: a daemon running its embedded dev headnode hosts one mock CN
 * whose sysinfo says it is the headnode (smartos-live src/sysinfo: the `headnode=true` boot
 * parameter, "Headnode ID"), which CNAPI lists as `headnode: true` (sdc-cnapi
 * lib/models/server.js updateFromSysinfo) and DAPI never places VMs on (sdc-cnapi
 * lib/endpoints/allocations.js getServers, sdc-designation hard-filter-headnode). The fleet
 * commands neither count nor delete it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { waitFor } from './helpers/fakes.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const sdc = require('sdc-clients') as { CNAPI: any };
const log = createQuietLogger('headnode-server-test');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;

function call(client: Obj, method: string, ...args: unknown[]): Promise<any> {
  return new Promise((resolve, reject) => {
    client[method](...args, (err: Error | null, result: unknown) => (err ? reject(err) : resolve(result)));
  });
}

describe('the dev DC headnode server', () => {
  const daemons: Daemon[] = [];
  const dirs: string[] = [];

  afterEach(async () => {
    for (const d of daemons.splice(0)) await d.stop();
    for (const dir of dirs.splice(0)) await fsp.rm(dir, { recursive: true, force: true });
  });

  async function start(dataDir: string): Promise<Daemon> {
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: { startSpreadMs: 50 } }));
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0 }, env: {}, mdata: noMdata });
    const daemon = new Daemon({ config, log, plugins: [], embeddedHeadnode: {} });
    daemons.push(daemon);
    await daemon.start();
    return daemon;
  }

  it('is created with the dev headnode, says it is the headnode, and DAPI places nothing on it', async () => {
    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-hn-server-'));
    dirs.push(dataDir);
    const daemon = await start(dataDir);
    const hn = daemon.fleet.headnode();
    expect(hn).toBeDefined();
    expect(daemon.fleet.size).toBe(1);
    expect(daemon.fleet.computeNodeCount).toBe(0);
    const onDisk = JSON.parse(await fsp.readFile(path.join(dataDir, 'servers', hn!.uuid, 'sysinfo.json'), 'utf8')) as Obj;
    expect(onDisk['Boot Parameters']).toMatchObject({ headnode: 'true' });
    expect(onDisk.Hostname).toBe('headnode');
    expect(onDisk['Headnode ID']).toBe(0);
    expect(onDisk['Network Interfaces'].dnet1['NIC Names']).toContain('external');

    // --servers counts compute nodes only.
    const grown = await daemon.growTo(2);
    expect(grown.created).toHaveLength(2);
    expect(daemon.fleet.size).toBe(3);
    expect(daemon.fleet.computeNodeCount).toBe(2);
    const cns = grown.created.map((c) => c.uuid);

    const cnapi = new sdc.CNAPI({ url: daemon.config.urls.cnapi, log, agent: false });
    const headnodes = (await waitFor(async () => {
      const l = (await call(cnapi, 'listServers', { headnode: 'true', extras: 'memory' })) as Obj[];
      return l.length === 1 && l[0]!.status === 'running' && l[0]!.memory_total_bytes ? l : undefined;
    }, 20_000, 'the headnode server in CNAPI')) as Obj[];
    expect(headnodes[0]).toMatchObject({ uuid: hn!.uuid, hostname: 'headnode', headnode: true, setup: true });
    const others = (await call(cnapi, 'listServers', { headnode: 'false' })) as Obj[];
    expect(others.map((s) => s.uuid).sort()).toEqual([...cns].sort());
    await waitFor(async () => {
      const l = (await call(cnapi, 'listServers', { uuids: cns.join(','), extras: 'memory' })) as Obj[];
      return l.length === 2 && l.every((s) => s.status === 'running' && s.memory_total_bytes);
    }, 20_000, 'both compute nodes running with a status report');

    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${daemon.config.urls.cnapi}/allocate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          vm: { brand: 'joyent', owner_uuid: randomUUID(), ram: 256, vm_uuid: randomUUID() },
          image: {},
          package: {},
          nic_tags: ['admin', 'external'],
        }),
      });
      const body = (await res.json()) as Obj;
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(cns).toContain(body.server.uuid);
    }

    // The control API lists it as the headnode and refuses to delete it.
    const listed = (await (await fetch(`${daemon.controlAddress.url}/servers`)).json()) as Obj[];
    expect(listed.filter((s) => s.headnode).map((s) => s.uuid)).toEqual([hn!.uuid]);
    const del = await fetch(`${daemon.controlAddress.url}/servers/${hn!.uuid}`, { method: 'DELETE' });
    expect(del.status).toBe(409);
    expect(daemon.fleet.headnode()?.uuid).toBe(hn!.uuid);

    // A restart on the same data dir keeps the one headnode server.
    await daemon.stop();
    daemons.splice(daemons.indexOf(daemon), 1);
    const again = await start(dataDir);
    expect(again.fleet.headnode()?.uuid).toBe(hn!.uuid);
    expect(again.fleet.list().filter((cn) => cn.sysinfo['Boot Parameters']?.headnode === 'true')).toHaveLength(1);
    expect(again.fleet.computeNodeCount).toBe(2);
  }, 60_000);

  it('is not made for a daemon without the dev headnode', async () => {
    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-hn-server-'));
    dirs.push(dataDir);
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0 }, env: {}, mdata: noMdata });
    const daemon = new Daemon({ config, log, plugins: [] });
    daemons.push(daemon);
    await daemon.start();
    expect(daemon.fleet.headnode()).toBeUndefined();
    expect(daemon.fleet.size).toBe(0);
  });
});
