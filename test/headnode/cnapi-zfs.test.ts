/**
 * CNAPI's (deprecated) ZFS routes end to end: sdc-clients' CNAPI client (its restify JSON
 * client, as sdc-clients has no ZFS methods) against the daemon's embedded dev headnode, whose
 * CNAPI sends the zfs_* tasks to a mock CN's cn-agent; then a daemon restart, after which the
 * CN still has what the routes changed.
 *
 * Follows sdc-cnapi lib/endpoints/zfs.js (routes, params, 204s, the `cannot ...:` 500s),
 * lib/models/server.js (zfsTask, sendTaskRequest's 'posting task to cn-agent' error) and
 * sdc-cnapi test/test-zfs.js (the sequence and what it checks).
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { call, closeClient, cnapiClient, raw, rawError, waitFor, type Client } from './helpers/sdc-clients.js';
import { createServers } from '../daemon/helpers/control.js';

const TIMINGS = { heartbeatIntervalMs: 500, statusThrottleMs: 200, startSpreadMs: 50, sysinfoBackoff: { minMs: 50, maxMs: 500 } };
const log = createQuietLogger('cnapi-zfs-test');

type Row = { name: string; used: string; avail: string; refer: string; type: string; mountpoint: string };
type Props = Record<string, Record<string, string>>;

describe('dev CNAPI ZFS routes, through sdc-clients, against a mock CN', () => {
  let dataDir: string;
  let daemon: Daemon | undefined;
  let cnapi: Client;
  let server: string;
  const dataset = `zones/${newUuid()}`;
  const enc = encodeURIComponent(dataset);

  async function startDaemon(): Promise<void> {
    const config = await resolveConfig({ flags: { dataDir, bindIp: '127.0.0.1', cmonPort: 0 }, env: {}, mdata: noMdata });
    daemon = new Daemon({ config, log, plugins: [], embeddedHeadnode: {} });
    await daemon.start();
    closeClient(cnapi);
    cnapi = cnapiClient(daemon.config.urls.cnapi!);
  }

  /** The CN is registered in CNAPI and knows it (cn-agent takes tasks from then on). */
  async function serverReady(): Promise<void> {
    await waitFor(async () => {
      const s = await call<{ status?: string }>(cnapi, 'getServer', server);
      return s.status === 'running' && daemon!.fleet.get(server)?.registered;
    }, 30_000, 50);
  }

  const datasets = async (): Promise<Row[]> => (await raw<Row[]>(cnapi, 'get', `/servers/${server}/datasets`)).body;

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-cnapi-zfs-'));
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: TIMINGS }));
    await startDaemon();
    [server] = (await createServers(daemon!, { count: 1 })) as [string];
    await serverReady();
  }, 60_000);

  afterAll(async () => {
    closeClient(cnapi);
    await daemon?.stop();
    await fsp.rm(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('lists the datasets and pools of the server', async () => {
    const rows = await datasets();
    expect(rows.length).toBeGreaterThan(5);
    for (const d of rows) {
      for (const k of ['name', 'type', 'used', 'avail', 'refer', 'mountpoint'] as const) expect(typeof d[k]).toBe('string');
    }
    expect(rows.find((d) => d.name === 'zones/var')).toMatchObject({ type: 'filesystem', mountpoint: '/var' });
    const pools = (await raw<Record<string, string>[]>(cnapi, 'get', `/servers/${server}/zpools`)).body;
    expect(pools).toEqual([{ name: 'zones', size: expect.any(String), allocated: expect.any(String), free: expect.any(String), cap: expect.stringMatching(/%$/), health: 'ONLINE', altroot: '-' }]);
  });

  it('creates a dataset, snapshots it, rolls back, destroys the snapshot (204s); the list shows each step', async () => {
    expect((await raw(cnapi, 'post', `/servers/${server}/datasets`, { dataset })).statusCode).toBe(204);
    expect((await datasets()).find((d) => d.name === dataset)).toMatchObject({ type: 'filesystem', used: '23K', mountpoint: `/${dataset}` });

    expect((await raw(cnapi, 'post', `/servers/${server}/datasets/${enc}/snapshot`, { name: 'snappy' })).statusCode).toBe(204);
    const snaps = (await raw<Row[]>(cnapi, 'get', `/servers/${server}/datasets/${enc}/snapshots`)).body;
    expect(snaps.map((s) => s.name)).toEqual([`${dataset}@snappy`]);

    expect((await raw(cnapi, 'post', `/servers/${server}/datasets/${enc}/rollback`, { name: 'snappy' })).statusCode).toBe(204);
    expect((await raw(cnapi, 'del', `/servers/${server}/datasets/${encodeURIComponent(`${dataset}@snappy`)}`)).statusCode).toBe(204);
    expect((await datasets()).map((d) => d.name).filter((n) => n.startsWith(dataset))).toEqual([dataset]);
  });

  it('sets properties, then reads them per dataset and across datasets, filtered by prop1..propN', async () => {
    const set = await raw(cnapi, 'post', `/servers/${server}/datasets/${enc}/properties`, { properties: { quota: '5G' } });
    expect(set.statusCode).toBe(204);

    const one = (await raw<Props>(cnapi, 'get', `/servers/${server}/datasets/${enc}/properties`)).body;
    expect(one['zones/var']).toBeUndefined();
    expect(one[dataset]).toMatchObject({ quota: '5368709120', type: 'filesystem', mountpoint: `/${dataset}` });

    const some = (await raw<Props>(cnapi, 'get', `/servers/${server}/datasets/${enc}/properties?prop1=quota&prop2=mountpoint`)).body;
    expect(some[dataset]).toEqual({ quota: '5368709120', mountpoint: `/${dataset}` });
    expect(some['zones/var']).toBeUndefined();

    const all = (await raw<Props>(cnapi, 'get', `/servers/${server}/dataset-properties?prop1=quota&prop2=mountpoint`)).body;
    expect(all[dataset]).toEqual({ quota: '5368709120', mountpoint: `/${dataset}` });
    for (const ds of ['zones', 'zones/var']) expect(Object.keys(all[ds]!).sort()).toEqual(['mountpoint', 'quota']);
  });

  it("answers a failed task with CNAPI's 500: the route's words, then cn-agent's error body", async () => {
    const err = await rawError(cnapi, 'post', `/servers/${server}/datasets`, { dataset });
    expect(err.statusCode).toBe(500);
    expect(err.body!.code).toBe('InternalError');
    const prefix = 'cannot create dataset:posting task to cn-agent: ';
    expect(err.body!.message!.startsWith(prefix)).toBe(true);
    expect(JSON.parse(err.body!.message!.slice(prefix.length)).error).toBe(
      `failed to create ZFS dataset "${dataset}": Command failed: /sbin/zfs create ${dataset}\ncannot create '${dataset}': dataset already exists\n`,
    );

    const snapErr = await rawError(cnapi, 'post', `/servers/${server}/datasets/${encodeURIComponent('zones/none')}/rollback`, { name: 'x' });
    expect(snapErr.statusCode).toBe(500);
    expect(snapErr.body!.message).toMatch(/^cannot create snapshot: posting task to cn-agent: .*cannot open 'zones\/none@x': dataset does not exist/);

    const gone = await rawError(cnapi, 'get', `/servers/${newUuid()}/datasets`);
    expect(gone.statusCode).toBe(404);
    expect(gone.body!.code).toBe('ResourceNotFound');
  });

  it('keeps the dataset and its properties across a daemon restart', async () => {
    await raw(cnapi, 'post', `/servers/${server}/datasets/${enc}/snapshot`, { name: 'kept' });
    await daemon!.stop();
    daemon = undefined;
    await startDaemon();
    await serverReady();
    const names = (await datasets()).map((d) => d.name);
    expect(names).toEqual(expect.arrayContaining([dataset, `${dataset}@kept`]));
    const props = (await raw<Props>(cnapi, 'get', `/servers/${server}/datasets/${enc}/properties?prop1=quota`)).body;
    expect(props[dataset]).toEqual({ quota: '5368709120' });

    expect((await raw(cnapi, 'del', `/servers/${server}/datasets/${encodeURIComponent(`${dataset}@kept`)}`)).statusCode).toBe(204);
    expect((await raw(cnapi, 'del', `/servers/${server}/datasets/${enc}`)).statusCode).toBe(204);
    expect((await datasets()).map((d) => d.name).filter((n) => n.startsWith(dataset))).toEqual([]);
  }, 60_000);
});
