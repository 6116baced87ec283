/**
 * config-agent on mock CNs against the dev SAPI, driven from the outside with sdc-clients'
 * SAPI client (what sdcadm uses): each CN's agents that carry manifests (sdc-config-agent's
 * GZ mode, config-agent.d) get their files rendered under `<server dir>/config/<path>`, a
 * metadata change of the `sdc` application (PUT /applications/:uuid) reaches every CN's files
 * within one interval, unchanged configs are asked with If-None-Match and answered 304 and
 * rewrite nothing, a template that does not compile keeps the last good file and is logged
 * once, and SAPI being down leaves the files alone and is counted.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import bunyan from 'bunyan';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigAgentPlugin } from '../../src/agents/config-agent/index.js';
import { createQuietLogger } from '../../src/common/log.js';
import { SapiService } from '../../src/headnode/sapi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import type { MockCnImpl } from '../../src/mockcn/mock-cn.js';
import { call, type Client } from '../headnode/helpers/sdc-clients.js';
import { makeContext, TestFleet, waitFor, type TestContext } from './helpers/fleet.js';
import { RecordingProxy } from './helpers/recording-proxy.js';

const require = createRequire(import.meta.url);
const { SAPI } = require('sdc-clients') as { SAPI: new (o: object) => Client };

type Obj = Record<string, any>;
const SERVED = ['cn-agent', 'vm-agent', 'net-agent', 'cmon-agent'];
const POLL_MS = 300;

describe('config-agent on every mock CN', () => {
  let dir: string;
  let fleet: TestFleet;
  let sapiService: SapiService;
  let sapi: Client;
  let tc: TestContext;
  let agent: ConfigAgentPlugin;
  let cns: MockCnImpl[];
  let sdcApp: Obj;
  const ring = new bunyan.RingBuffer({ limit: 500 });

  const cnFile = (cn: MockCnImpl, agentName: string): string =>
    path.join(cn.paths.dir, 'config', 'opt/smartdc/agents/etc', `${agentName}.config.json`);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-config-agent-'));
    const log = createQuietLogger('config-agent-test');
    sapiService = new SapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }), datacenterName: 'testdc', dnsDomain: 'example.com' });
    await sapiService.start({ host: '127.0.0.1', port: 0 });
    sapi = new SAPI({ url: sapiService.url, version: '~2', log, agent: false });
    fleet = await TestFleet.create();
    cns = [await fleet.addCn({ agents: true }), await fleet.addCn({ agents: true }), await fleet.addCn({ agents: true })];
    // Adopted as their installs adopt them (sapi-instances does it in a daemon).
    const services = (await call<Obj[]>(sapi, 'listServices', { type: 'agent' })) as Obj[];
    for (const cn of cns) {
      for (const a of cn.agents) {
        const svc = services.find((s) => s.name === a.name);
        if (svc && a.uuid) await call(sapi, 'createInstance', svc.uuid, { uuid: a.uuid, exists: true, params: { server_uuid: cn.uuid } });
      }
    }
    sdcApp = ((await call<Obj[]>(sapi, 'listApplications', { name: 'sdc' })) as Obj[])[0]!;
    tc = makeContext(fleet, { sapi: sapiService.url });
    const agentLog = bunyan.createLogger({ name: 'config-agent-test', streams: [{ type: 'raw', stream: ring, level: 'debug' }] });
    agent = new ConfigAgentPlugin({ ...tc.ctx, log: agentLog }, { pollIntervalMs: POLL_MS, startSpreadMs: 0, tickMs: 25 });
    agent.start();
    for (const cn of cns) agent.attach(cn);
  });

  afterAll(async () => {
    agent?.stop();
    tc?.close();
    sapi?.close();
    await sapiService?.stop();
    await fleet?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("renders each served agent's manifest with the sdc application's metadata, and records its post_cmd", async () => {
    for (const cn of cns) {
      for (const name of SERVED) await waitFor(`${name} config of ${cn.uuid}`, () => stat(cnFile(cn, name)).then(() => true));
    }
    const cnAgent = JSON.parse(await readFile(cnFile(cns[0]!, 'cn-agent'), 'utf8')) as Obj;
    expect(cnAgent).toEqual({ cnapi: { url: 'http://cnapi.testdc.example.com' }, no_rabbit: true });
    expect(JSON.parse(await readFile(cnFile(cns[1]!, 'vm-agent'), 'utf8'))).toEqual({ vmapi: { url: 'http://vmapi.testdc.example.com' }, no_rabbit: true });
    // Agents that carry no manifest are not served (config-agent.d lists only those that do).
    await expect(stat(path.join(cns[0]!.paths.dir, 'config/opt/smartdc/agents/etc/firewaller.config.json'))).rejects.toThrow();
    const details = agent.details(cns[0]!.uuid) as Obj;
    expect(details.postCmds.map((p: Obj) => p.manifest).sort()).toEqual([...SERVED].sort());
    expect(details.postCmds.find((p: Obj) => p.manifest === 'cn-agent').post_cmd).toContain('svcadm restart cn-agent');
    expect(details.configAgeSeconds).not.toBeNull();
  });

  it('asks again with If-None-Match: SAPI answers 304 and no file is rewritten', async () => {
    // A file is visible at its rename and counted once its durable write returns: on a busy host
    // the first round's last counts can land after the test above saw every file.
    await waitFor('the first round counted', () => agent.stats().filesWritten >= cns.length * SERVED.length, 10_000);
    const written = agent.stats().filesWritten;
    const mtime = (await stat(cnFile(cns[0]!, 'cn-agent'))).mtimeMs;
    const before = sapiService.stats().configsNotModified!;
    await waitFor('304s for every instance of a round', () => sapiService.stats().configsNotModified! >= before + cns.length * SERVED.length, 10_000);
    expect(agent.stats().filesWritten).toBe(written);
    expect((await stat(cnFile(cns[0]!, 'cn-agent'))).mtimeMs).toBe(mtime);
  });

  it('a metadata change of the sdc application (PUT /applications/:uuid) reaches every CN within one interval, and is counted', async () => {
    const written = agent.stats().filesWritten;
    const changed = agent.stats().configsChanged;
    await call(sapi, 'updateApplication', sdcApp.uuid, { action: 'update', metadata: { CNAPI_SERVICE: 'cnapi2.testdc.example.com' } });
    const t0 = Date.now();
    for (const cn of cns) {
      await waitFor(`new CNAPI in ${cn.uuid}`, async () => (await readFile(cnFile(cn, 'cn-agent'), 'utf8')).includes('cnapi2.testdc.example.com'));
    }
    // 1.5 x the interval is the longest a CN waits between two checks; a busy machine gets slack.
    expect(Date.now() - t0).toBeLessThan(1.5 * POLL_MS + 3000);
    // Counted once its durable write has returned (the file is visible at its rename, a little before).
    await waitFor('the writes counted', () => agent.stats().filesWritten >= written + cns.length, 5000);
    expect(agent.stats().configsChanged).toBeGreaterThan(changed);
    // Only the cn-agent file changed: the other files of the same instances were not rewritten.
    expect(JSON.parse(await readFile(cnFile(cns[2]!, 'vm-agent'), 'utf8')).vmapi.url).toBe('http://vmapi.testdc.example.com');
  });

  it('a SAPI manifest with a broken template keeps the last good file and is logged once', async () => {
    const svc = ((await call<Obj[]>(sapi, 'listServices', { type: 'agent', name: 'vm-agent' })) as Obj[])[0]!;
    const good = (await call<Obj>(sapi, 'createManifest', { name: 'extra', path: '/opt/custom/extra.conf', template: 'dc={{{datacenter_name}}}\n' })) as Obj;
    await call(sapi, 'updateService', svc.uuid, { action: 'update', manifests: { extra: good.uuid } });
    const extra = (cn: MockCnImpl): string => path.join(cn.paths.dir, 'config/opt/custom/extra.conf');
    for (const cn of cns) await waitFor('extra file', async () => (await readFile(extra(cn), 'utf8').catch(() => '')) === 'dc=testdc\n');

    const bad = (await call<Obj>(sapi, 'createManifest', { name: 'extra', path: '/opt/custom/extra.conf', template: 'dc={{#datacenter_name}}\n' })) as Obj;
    // Counted before the change: a CN that checks while SAPI's answer is on its way tries the
    // broken template then, and only then (its Etag is kept: the template is tried once).
    const errorsBefore = agent.stats().renderErrors;
    await call(sapi, 'updateService', svc.uuid, { action: 'update', manifests: { extra: bad.uuid } });
    await waitFor('the broken template tried on every CN', () => agent.stats().renderErrors >= errorsBefore + cns.length, 30_000);
    // A few more rounds of checks (304s now: the config did not change again).
    const seen = sapiService.stats().configsNotModified!;
    await waitFor('more rounds', () => sapiService.stats().configsNotModified! >= seen + 2 * cns.length * SERVED.length, 10_000);
    for (const cn of cns) expect(await readFile(extra(cn), 'utf8')).toBe('dc=testdc\n');
    const logged = ring.records.filter((r: Obj) => r.msg?.startsWith('failed to render') && r.manifest === 'extra');
    expect(logged).toHaveLength(cns.length);
  });

  it("a new CN whose agent instances SAPI has not adopted yet: logged at INFO, no error counted, its files once adopted", async () => {
    const cn = await fleet.addCn({ agents: true });
    const errors = tc.errors['config-agent.sapi'];
    const mine = (): Obj[] => ring.records.filter((r: Obj) => r.server === cn.uuid);
    agent.attach(cn);
    await waitFor('a first check SAPI answers 404', () => mine().some((r) => /not adopted/.test(r.msg)));
    const services = (await call<Obj[]>(sapi, 'listServices', { type: 'agent' })) as Obj[];
    for (const a of cn.agents) {
      const svc = services.find((s) => s.name === a.name);
      if (svc && a.uuid) await call(sapi, 'createInstance', svc.uuid, { uuid: a.uuid, exists: true, params: { server_uuid: cn.uuid } });
    }
    await waitFor('its cn-agent config', () => stat(cnFile(cn, 'cn-agent')).then(() => true), 30_000);
    // (The broken 'extra' template the test above left in SAPI is an ERROR here too, rightly.)
    expect(mine().filter((r) => r.level >= bunyan.WARN && r.manifest !== 'extra')).toEqual([]);
    expect(mine().find((r) => /not adopted/.test(r.msg))?.level).toBe(bunyan.INFO);
    expect(tc.errors['config-agent.sapi']).toBe(errors);
    agent.detach(cn.uuid);
  });

  it("a CN removed while its check is in flight: no file is written into its dir after the detach has settled", async () => {
    const proxy = new RecordingProxy(sapiService.url);
    await proxy.start();
    const ptc = makeContext(fleet, { sapi: proxy.url });
    const late = new ConfigAgentPlugin({ ...ptc.ctx, log: createQuietLogger('config-agent-late') }, { pollIntervalMs: 60_000, startSpreadMs: 0, tickMs: 25 });
    try {
      const cn = await fleet.addCn({ agents: true });
      const services = (await call<Obj[]>(sapi, 'listServices', { type: 'agent' })) as Obj[];
      for (const a of cn.agents) {
        const svc = services.find((s) => s.name === a.name);
        if (svc && a.uuid) await call(sapi, 'createInstance', svc.uuid, { uuid: a.uuid, exists: true, params: { server_uuid: cn.uuid } });
      }
      let release!: () => void;
      proxy.hold = new Promise<void>((r) => (release = r));
      late.start();
      late.attach(cn);
      await waitFor('its first check in flight', () => proxy.records.some((r) => r.path.startsWith('/configs/')));
      // The daemon's removal: detach, wait for what it returns, then the CN's dir goes.
      const settled = late.detach(cn.uuid);
      release();
      await settled;
      await rm(cn.paths.dir, { recursive: true, force: true });
      // SAPI's answers have reached the agent: anything it would still write is written by now.
      await waitFor('the answers forwarded', () => proxy.records.filter((r) => r.path.startsWith('/configs/')).every((r) => r.status !== undefined));
      await new Promise((r) => setTimeout(r, 300));
      expect(existsSync(cn.paths.dir)).toBe(false);
    } finally {
      late.stop();
      ptc.close();
      await proxy.stop();
    }
  });

  it('SAPI down: checks fail and are counted, and the files stay as they were', async () => {
    const failuresBefore = agent.stats().checkFailures;
    await sapiService.stop();
    await waitFor('failed checks', () => agent.stats().checkFailures >= failuresBefore + cns.length, 10_000);
    expect(tc.errors['config-agent.sapi']).toBeGreaterThan(0);
    expect(JSON.parse(await readFile(cnFile(cns[0]!, 'cn-agent'), 'utf8')).cnapi.url).toBe('http://cnapi2.testdc.example.com');
  });

});
