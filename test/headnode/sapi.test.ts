/**
 * The dev SAPI with sdc-clients' SAPI class (real Triton client code), answering as sdc-sapi
 * does (lib/server/endpoints/{applications,services,instances}.js, lib/server/model.js):
 * seeded like a real DC (the `sdc` application and the agent services sdcadm creates,
 * sdcadm lib/steps/sapi.js ensureAgentServices), agent instances adopted, listed per
 * Accept-Version, deleted, with SAPI's error bodies, and kept across a restart.
 */
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { newUuid } from '../../src/common/uuid.js';
import { BUILTIN_AGENTS } from '../../src/mockcn/agents-dir.js';
import { SapiService } from '../../src/headnode/sapi/index.js';
import { SAPI_INSTANCE_LOG } from '../../src/headnode/sapi/service.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { call, callError, raw, rawError, type Client } from './helpers/sdc-clients.js';

const require = createRequire(import.meta.url);
const { SAPI } = require('sdc-clients') as { SAPI: new (o: object) => Client };
const log = createQuietLogger('sapi-test');

/** sdcadm's agent services (lib/steps/sapi.js). */
const AGENT_SERVICES = [
  'agents_core', 'amon-agent', 'amon-relay', 'cmon-agent', 'cn-agent', 'config-agent', 'firewaller',
  'hagfish-watcher', 'net-agent', 'smartlogin', 'vm-agent',
];

type Obj = Record<string, any>;

describe('dev SAPI', () => {
  let dir: string;
  let service: SapiService;
  let v2: Client;
  let v1: Client;

  async function start(): Promise<void> {
    service = new SapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }), datacenterName: 'testdc' });
    await service.start({ host: '127.0.0.1', port: 0 });
    // sdcadm asks for '~2'; the agents' install scripts and old clients send no version (~1).
    v2 = new SAPI({ url: service.url, version: '~2', log, agent: false });
    v1 = new SAPI({ url: service.url, version: '~1', log, agent: false });
  }

  async function stop(): Promise<void> {
    v1.close();
    v2.close();
    await service.stop();
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-sapi-'));
    await start();
  });

  afterAll(async () => {
    await stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function agentService(name: string): Promise<Obj> {
    const found = (await call<Obj[]>(v2, 'listServices', { type: 'agent', name })) as Obj[];
    expect(found).toHaveLength(1);
    return found[0]!;
  }

  it('is seeded like a real DC: the sdc application and its agent services', async () => {
    const apps = (await call<Obj[]>(v2, 'listApplications', { name: 'sdc' })) as Obj[];
    expect(apps).toHaveLength(1);
    expect(apps[0]).toMatchObject({ name: 'sdc', owner_uuid: DEFAULT_ADMIN_UUID, metadata: { datacenter_name: 'testdc' } });
    const sdc = apps[0]!;
    expect(await call(v2, 'getApplication', sdc.uuid)).toEqual(sdc);

    const services = (await call<Obj[]>(v2, 'listServices', { type: 'agent', application_uuid: sdc.uuid })) as Obj[];
    expect(services.map((s) => s.name).sort()).toEqual(AGENT_SERVICES);
    for (const s of services) {
      expect(s).toMatchObject({
        type: 'agent',
        application_uuid: sdc.uuid,
        params: { tags: { smartdc_role: s.name, smartdc_type: 'core' } },
        metadata: { SERVICE_NAME: s.name },
      });
    }
    // The installed agents' images, as sdcadm records them on the service.
    for (const a of BUILTIN_AGENTS) expect((await agentService(a.name)).params.image_uuid).toBe(a.imageUuid);

    // Accept-Version ~1 predates agent services: plain lists hide them, and nothing has a type.
    expect(await call(v1, 'listServices', {})).toEqual([]);
    const old = (await call<Obj[]>(v1, 'listServices', { type: 'agent', name: 'cn-agent' })) as Obj[];
    expect(old).toHaveLength(1);
    expect(old[0]).not.toHaveProperty('type');
  });

  it('adopts an agent instance (exists: true), lists, gets and deletes it', async () => {
    const svc = await agentService('vm-agent');
    const uuid = newUuid();
    const server = newUuid();
    // What sdc-cn-agent lib/backends/common.js adoptInstanceInSapi posts, plus RFD 82's params.
    const created = (await call<Obj>(v2, 'createInstance', svc.uuid, {
      uuid,
      exists: true,
      name: 'vm-agent',
      params: { server_uuid: server, image_uuid: svc.params.image_uuid },
    })) as Obj;
    expect(created).toEqual({ uuid, service_uuid: svc.uuid, params: { server_uuid: server, image_uuid: svc.params.image_uuid }, type: 'agent' });
    expect(await call(v2, 'getInstance', uuid)).toEqual(created);
    const listed = (await call<Obj[]>(v2, 'listInstances', { service_uuid: svc.uuid })) as Obj[];
    expect(listed.map((i) => i.uuid)).toContain(uuid);
    expect((await call<Obj[]>(v2, 'listInstances', { type: 'agent' })) as Obj[]).toContainEqual(created);
    // ~1: instances of agents only when asked by service, and without a type.
    expect(((await call<Obj[]>(v1, 'listInstances', {})) as Obj[]).map((i) => i.uuid)).not.toContain(uuid);
    const byService = (await call<Obj[]>(v1, 'listInstances', { service_uuid: svc.uuid })) as Obj[];
    expect(byService.find((i) => i.uuid === uuid)).toEqual({ uuid, service_uuid: svc.uuid, params: created.params });
    // Adopting it again is no error: SAPI stores it over the old record.
    expect(await call(v2, 'createInstance', svc.uuid, { uuid, exists: true, params: created.params })).toEqual(created);

    const del = await raw(v2, 'del', `/instances/${uuid}`);
    expect(del.statusCode).toBe(204);
    const gone = await callError(v2, 'getInstance', uuid);
    expect(gone.statusCode).toBe(404);
    expect(gone.body).toEqual({ code: 'ResourceNotFound', message: `no such instance: ${uuid}` });
    const again = await rawError(v2, 'del', `/instances/${uuid}`);
    expect(again.statusCode).toBe(404);
    expect(again.body).toEqual({ code: 'ResourceNotFound', message: `no such instance: ${uuid}` });
  });

  it('answers bad requests with SAPI\'s errors', async () => {
    const missing = await rawError(v2, 'post', '/instances', { uuid: newUuid() });
    expect(missing.statusCode).toBe(409);
    expect(missing.body).toEqual({ code: 'MissingParameter', message: 'missing required keys: service_uuid' });
    const stranger = newUuid();
    const noService = await callError(v2, 'createInstance', stranger, { exists: true });
    expect(noService.statusCode).toBe(404);
    expect(noService.body).toEqual({ code: 'ResourceNotFound', message: `no such service: ${stranger}` });
    const getSvc = await callError(v2, 'getService', stranger);
    expect(getSvc.body).toEqual({ code: 'ResourceNotFound', message: `no such service: ${stranger}` });
    const getApp = await callError(v2, 'getApplication', stranger);
    expect(getApp.body).toEqual({ code: 'ResourceNotFound', message: `no such application: ${stranger}` });
    const svcKeys = await rawError(v2, 'post', '/services', { name: 'x' });
    expect(svcKeys.body).toEqual({ code: 'MissingParameter', message: 'missing required keys: application_uuid' });
    // A DELETE of an unknown service is a bare 404, as SAPI sends it.
    const delSvc = await rawError(v2, 'del', `/services/${stranger}`);
    expect(delSvc.statusCode).toBe(404);
    const badParams = await rawError(v2, 'post', '/instances', { service_uuid: (await agentService('cn-agent')).uuid, params: 'x' });
    expect(badParams.statusCode).toBe(409);

    const v3 = new SAPI({ url: service.url, version: '~3', log, agent: false });
    try {
      const unsupported = await callError(v3, 'listServices', {});
      expect(unsupported.statusCode).toBe(400);
      expect(unsupported.body).toEqual({ code: 'InvalidVersion', message: '~3 is not supported by GET /services' });
    } finally {
      v3.close();
    }
  });

  it('has an instance write on disk before it answers, as a kill -9 right after would find it', async () => {
    const svc = await agentService('net-agent');
    const put = newUuid();
    const doomed = newUuid();
    await call(v2, 'createInstance', svc.uuid, { uuid: doomed, exists: true });
    await call(v2, 'createInstance', svc.uuid, { uuid: put, exists: true, params: { server_uuid: newUuid() } });
    expect((await raw(v2, 'del', `/instances/${doomed}`)).statusCode).toBe(204);
    // The process dies now: only the disk is left. A SAPI started on it (this one never stopped)
    // has what was answered; a line torn by the crash is ignored.
    await appendFile(path.join(dir, 'headnode', SAPI_INSTANCE_LOG), '{"op":"put","instance":{"uu');
    const other = new SapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }) });
    await other.start({ host: '127.0.0.1', port: 0 });
    const client = new SAPI({ url: other.url, version: '~2', log, agent: false });
    try {
      expect(await call(client, 'getInstance', put)).toEqual(await call(v2, 'getInstance', put));
      expect((await callError(client, 'getInstance', doomed)).statusCode).toBe(404);
    } finally {
      client.close();
      await other.stop();
    }
    // The log was folded into the document by that start and stop.
    expect(await readFile(path.join(dir, 'headnode', SAPI_INSTANCE_LOG), 'utf8')).toBe('');
  });

  it('keeps its objects across a restart', async () => {
    const svc = await agentService('cn-agent');
    const uuid = newUuid();
    await call(v2, 'createInstance', svc.uuid, { uuid, exists: true, params: { server_uuid: newUuid() } });
    const before = await call(v2, 'getInstance', uuid);
    await stop();
    await start();
    expect(await call(v2, 'getInstance', uuid)).toEqual(before);
    expect(((await call<Obj[]>(v2, 'listServices', { type: 'agent' })) as Obj[]).length).toBe(AGENT_SERVICES.length);
  });
});
