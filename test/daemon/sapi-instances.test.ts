/**
 * RFD 82 (triton-mockcloud's seed 001) for mock CNs, seen through sdc-clients' SAPI and CNAPI
 * clients against the daemon's embedded dev headnode:
 *
 * - every agent instance of every CN exists in SAPI, adopted under its agent's service of type
 *   `agent` (sdc-cn-agent lib/backends/common.js adoptInstanceInSapi: `POST /instances` with
 *   `exists: true`; sdc-sapi lib/server/endpoints/instances.js), with RFD 82's
 *   `params.server_uuid`;
 * - agent_install adopts the new instance it makes (the agents' npm/postinstall.sh
 *   adopt_instance_if_necessary), driven the way sdcadm drives it (sdcadm
 *   lib/post-setup/cmon.js: CNAPI `POST /servers/:uuid/install-agent`, then wait for the task);
 * - deleting a CN deletes its instances from SAPI, none left behind; a SAPI that is down then
 *   gets the deletes later;
 * - a daemon restarted over existing CNs finds their instances and adopts nothing twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { PENDING_DELETES_FILE } from '../../src/agents/sapi-instances/index.js';
import { Headnode } from '../../src/headnode/headnode.js';
import { call, callError, closeClient, cnapiClient, raw, waitFor, type Client } from '../headnode/helpers/sdc-clients.js';
import { createServers } from './helpers/control.js';

const require = createRequire(import.meta.url);
const { SAPI } = require('sdc-clients') as { SAPI: new (o: object) => Client };
const log = createQuietLogger('sapi-instances-test');

type Obj = Record<string, any>;

const FAST = { settleMs: 20, retryMinMs: 50, retryMaxMs: 200 };

describe('agent instances of mock CNs in SAPI', () => {
  const dirs: string[] = [];
  const daemons: Daemon[] = [];
  const clients: Client[] = [];
  const headnodes: Headnode[] = [];

  afterEach(async () => {
    for (const c of clients.splice(0)) closeClient(c);
    for (const d of daemons.splice(0)) await d.stop();
    for (const h of headnodes.splice(0)) await h.stop();
    for (const dir of dirs.splice(0)) await fsp.rm(dir, { recursive: true, force: true });
  });

  async function newDataDir(): Promise<string> {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-sapi-instances-'));
    dirs.push(dir);
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ timings: { startSpreadMs: 50 } }));
    return dir;
  }

  async function startDaemon(dataDir: string, flags: Record<string, string> = {}, tuning: Obj = {}): Promise<Daemon> {
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0, ...flags }, env: {}, mdata: noMdata });
    const embedded = Object.keys(flags).length === 0;
    const daemon = new Daemon({ config, log, plugins: [], sapiInstances: { ...FAST, ...tuning }, ...(embedded ? { embeddedHeadnode: {} } : {}) });
    daemons.push(daemon);
    await daemon.start();
    return daemon;
  }

  function sapiClient(url: string): Client {
    const c = new SAPI({ url, version: '~2', log, agent: false });
    clients.push(c);
    return c;
  }

  function cnapi(url: string): Client {
    const c = cnapiClient(url);
    clients.push(c);
    return c;
  }

  async function deleteServer(daemon: Daemon, uuid: string): Promise<{ warnings: string[] }> {
    const res = await fetch(`${daemon.controlAddress.url}/servers/${uuid}`, { method: 'DELETE' });
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as { warnings: string[] };
  }

  /** The agents CNAPI has for a CN (what cn-agent posted). */
  function agentsOf(c: Client, uuid: string): Promise<Obj[]> {
    return waitFor(async () => {
      const s = (await call<Obj>(c, 'getServer', uuid)) as Obj;
      return Array.isArray(s.agents) && s.agents.length > 0 && s.agents.every((a: Obj) => a.uuid) ? (s.agents as Obj[]) : undefined;
    }, 15_000);
  }

  /** SAPI's instance, or undefined on 404. */
  async function instance(sapi: Client, uuid: string): Promise<Obj | undefined> {
    try {
      return (await call<Obj>(sapi, 'getInstance', uuid)) as Obj;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  /** Every agent instance SAPI holds for a server (SAPI has no server filter: RFD 82 SAPI-297). */
  async function instancesOfServer(sapi: Client, server: string): Promise<Obj[]> {
    const all = (await call<Obj[]>(sapi, 'listInstances', { type: 'agent' })) as Obj[];
    return all.filter((i) => i.params?.server_uuid === server);
  }

  it('adopts every agent of every CN under its service; deleting a CN deletes its instances', async () => {
    const daemon = await startDaemon(await newDataDir());
    const sapi = sapiClient(daemon.config.urls.sapi!);
    const c = cnapi(daemon.config.urls.cnapi!);
    const [a, b] = (await createServers(daemon, { count: 2 })) as [string, string];

    const services = new Map(((await call<Obj[]>(sapi, 'listServices', { type: 'agent' })) as Obj[]).map((s) => [s.uuid as string, s]));
    for (const cn of [a, b]) {
      const agents = await agentsOf(c, cn);
      expect(agents).toHaveLength(10);
      for (const agent of agents) {
        const inst = await waitFor(() => instance(sapi, agent.uuid), 10_000);
        expect(inst, agent.name).toMatchObject({
          uuid: agent.uuid,
          type: 'agent',
          params: { server_uuid: cn, image_uuid: agent.image_uuid },
        });
        // Under the service named after the agent, of type agent.
        expect(services.get(inst.service_uuid)).toMatchObject({ name: agent.name, type: 'agent' });
      }
      expect((await instancesOfServer(sapi, cn)).map((i) => i.uuid).sort()).toEqual(agents.map((x) => x.uuid).sort());
    }
    // /status counts them (the last answer may still be on its way when SAPI has the instance);
    // the dev DC's headnode server is a mock CN too, with its own ten agents.
    const cns = (await call<Obj[]>(c, 'listServers', {})).length;
    const stats = await waitFor(async () => {
      const si = ((await (await fetch(`${daemon.controlAddress.url}/status`)).json()) as Obj).agents['sapi-instances'] as Obj;
      return si.adopted === 10 * cns ? si : undefined;
    }, 5000);
    expect(stats).toMatchObject({ adopted: 10 * cns, adoptFailures: 0, pendingCns: 0 });

    // One of a's instance uuids now names b in SAPI (whatever made it so): a's delete must check
    // SAPI's params.server_uuid and leave it alone, not delete by uuid alone.
    const [taken] = await instancesOfServer(sapi, a);
    const sapiUrl = daemon.config.urls.sapi!;
    expect((await fetch(`${sapiUrl}/instances/${taken!.uuid}`, { method: 'DELETE' })).status).toBe(204);
    const readopt = await fetch(`${sapiUrl}/instances`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-version': '~2' },
      body: JSON.stringify({ exists: true, uuid: taken!.uuid, service_uuid: taken!.service_uuid, params: { server_uuid: b } }),
    });
    expect(readopt.status, await readopt.clone().text()).toBeLessThan(300);

    const gone = await deleteServer(daemon, a);
    expect(gone.warnings).toEqual([]);
    expect(await instancesOfServer(sapi, a)).toEqual([]);
    expect(await instancesOfServer(sapi, b)).toHaveLength(11);
    expect(await instance(sapi, taken!.uuid)).toMatchObject({ params: { server_uuid: b } });
    const after = ((await (await fetch(`${daemon.controlAddress.url}/status`)).json()) as Obj).agents['sapi-instances'] as Obj;
    expect(after.leftAlone).toBe(1);
  }, 60_000);

  it('agent_install adopts the instance it makes; the CN\'s delete leaves none behind', async () => {
    const daemon = await startDaemon(await newDataDir());
    const sapi = sapiClient(daemon.config.urls.sapi!);
    const c = cnapi(daemon.config.urls.cnapi!);
    const [cn] = (await createServers(daemon, { count: 1 })) as [string];
    const before = await agentsOf(c, cn);
    const cmon = before.find((x) => x.name === 'cmon-agent')!;
    await waitFor(() => instance(sapi, cmon.uuid), 10_000);

    // sdcadm's way: uninstall, then install the agent again from its image. The uninstall
    // removes the instance uuid file (sdc-cn-agent lib/apm.js), so the install makes a new one.
    const un = (await raw(c, 'post', `/servers/${cn}/uninstall-agents`, { agents: ['cmon-agent'] })).body as Obj;
    expect((await call<Obj>(c, 'waitTask', un.id, { timeout: 30 })).status).toBe('complete');
    const inst = (await raw(c, 'post', `/servers/${cn}/install-agent`, { image_uuid: cmon.image_uuid })).body as Obj;
    const task = (await call<Obj>(c, 'waitTask', inst.id, { timeout: 60 })) as Obj;
    expect(task.status, JSON.stringify(task.history)).toBe('complete');

    const after = await waitFor(async () => {
      const agents = await agentsOf(c, cn);
      const x = agents.find((y) => y.name === 'cmon-agent');
      return x && x.uuid !== cmon.uuid ? x : undefined;
    }, 10_000);
    // Adopted by the task itself: there when the task is done, no background run needed.
    expect(await instance(sapi, after.uuid)).toMatchObject({ uuid: after.uuid, type: 'agent', params: { server_uuid: cn } });
    // The old instance stays in SAPI until someone deletes it, as after a real uninstall.
    expect(await instance(sapi, cmon.uuid)).toBeDefined();

    expect((await deleteServer(daemon, cn)).warnings).toEqual([]);
    expect(await instancesOfServer(sapi, cn)).toEqual([]);
    expect(await instance(sapi, after.uuid)).toBeUndefined();
    expect(await instance(sapi, cmon.uuid)).toBeUndefined();
  }, 90_000);

  it('a SAPI that is down gets the adoptions and deletes later; a restart adopts nothing twice', async () => {
    // A headnode apart from the daemon, so its SAPI can go away and come back on its port.
    const dataDir = await newDataDir();
    const hnDir = await newDataDir();
    const hn = new Headnode({ dataDir: hnDir, log });
    headnodes.push(hn);
    const urls = await hn.start();
    const flags = { cnapiUrl: urls.cnapi, vmapiUrl: urls.vmapi, napiUrl: urls.napi, imgapiUrl: urls.imgapi, sapiUrl: urls.sapi };
    const sapiPort = Number(new URL(urls.sapi).port);
    const sapi = sapiClient(urls.sapi);
    const c = cnapi(urls.cnapi);

    let daemon = await startDaemon(dataDir, flags);
    const [a, b] = (await createServers(daemon, { count: 2 })) as [string, string];
    await waitFor(async () => (await instancesOfServer(sapi, a)).length === 10 && (await instancesOfServer(sapi, b)).length === 10, 15_000);

    // SAPI goes down: a new CN and a deleted one wait for it.
    await hn.sapi.stop();
    const [fresh] = (await createServers(daemon, { count: 1 })) as [string];
    const del = await deleteServer(daemon, a);
    expect(del.warnings.join('\n')).toMatch(/SAPI: \d+ instance\(s\) not deleted yet/);
    const journal = JSON.parse(await fsp.readFile(path.join(dataDir, PENDING_DELETES_FILE), 'utf8')) as { instances: string[] };
    expect(journal.instances.length).toBeGreaterThanOrEqual(10);
    const down = (await (await fetch(`${daemon.controlAddress.url}/status`)).json()) as Obj;
    expect(down.errors['sapi.delete']).toBeGreaterThan(0);
    // CNs do not wait on SAPI: the new one registered and heartbeats.
    await agentsOf(c, fresh!);

    // Back on its port: the deletes and the adoption happen without anyone asking.
    await hn.sapi.start({ host: '127.0.0.1', port: sapiPort });
    await waitFor(async () => (await instancesOfServer(sapi, fresh!)).length === 10 && (await instancesOfServer(sapi, a)).length === 0, 20_000);
    await waitFor(async () => !(await fsp.stat(path.join(dataDir, PENDING_DELETES_FILE)).catch(() => undefined)), 5000);
    expect(await instancesOfServer(sapi, b)).toHaveLength(10);

    // A restart over existing CNs: their instances are found, none adopted again. Many CNs at
    // once are checked with one listing per service (a threshold of 1 CN here).
    await daemon.stop();
    daemons.splice(daemons.indexOf(daemon), 1);
    daemon = await startDaemon(dataDir, flags, { listThreshold: 1 });
    const stats = await waitFor(async () => {
      const s = (await (await fetch(`${daemon.controlAddress.url}/status`)).json()) as Obj;
      const si = s.agents['sapi-instances'] as Obj;
      return si.present >= 20 && si.pendingCns === 0 ? si : undefined;
    }, 15_000);
    expect(stats.adopted).toBe(0);
    expect(stats.listings).toBeGreaterThan(0);
    expect(await callError(sapi, 'getInstance', '00000000-0000-4000-8000-000000000000')).toMatchObject({ statusCode: 404 });
  }, 90_000);
});
