/**
 * The dev SAPI's configuration routes with sdc-clients' SAPI client, answered as sdc-sapi
 * answers them: GET /configs/:uuid merges the application's, service's and instance's
 * metadata and manifests (lib/server/attributes.js generateZoneConfig) with an Etag, and a
 * request with If-None-Match of that Etag gets 304 (restify conditionalRequest); the update
 * routes apply update / replace / delete (attributes.js applyChange); manifests are created,
 * got and deleted (lib/server/endpoints/manifests.js).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { SapiService } from '../../src/headnode/sapi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { call, callError, type Client } from './helpers/sdc-clients.js';

const require = createRequire(import.meta.url);
const { SAPI } = require('sdc-clients') as { SAPI: new (o: object) => Client };
const log = createQuietLogger('sapi-configs-test');
type Obj = Record<string, any>;

/** getConfig with its response, for the status and Etag. */
function getConfig(client: Client, uuid: string, headers: Record<string, string> = {}): Promise<{ status: number; etag?: string; body: Obj }> {
  return new Promise((resolve, reject) => {
    client.getConfig(uuid, { headers }, (err: Error | null, body: Obj, _req: unknown, res: { statusCode: number; headers: Obj }) => {
      if (err) reject(err);
      else resolve({ status: res.statusCode, etag: res.headers.etag, body });
    });
  });
}

describe('dev SAPI configs', () => {
  let dir: string;
  let service: SapiService;
  let sapi: Client;
  let app: Obj;
  let svc: Obj;
  const inst = newUuid();

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-sapi-configs-'));
    service = new SapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }), datacenterName: 'testdc' });
    await service.start({ host: '127.0.0.1', port: 0 });
    sapi = new SAPI({ url: service.url, version: '~2', log, agent: false });
    app = ((await call<Obj[]>(sapi, 'listApplications', { name: 'sdc' })) as Obj[])[0]!;
    svc = ((await call<Obj[]>(sapi, 'listServices', { type: 'agent', name: 'vm-agent' })) as Obj[])[0]!;
    await call(sapi, 'createInstance', svc.uuid, { uuid: inst, exists: true, params: { server_uuid: '4c4c4544-0000-0000-0000-000000000001' }, metadata: { OWN: 'instance' } });
  });

  afterAll(async () => {
    sapi?.close();
    await service?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("merges application, service and instance metadata with the instance's uuids, and answers 304 for its Etag", async () => {
    const first = await getConfig(sapi, inst);
    expect(first.status).toBe(200);
    expect(first.body.metadata).toMatchObject({
      datacenter_name: 'testdc',
      CNAPI_SERVICE: 'cnapi.testdc.local',
      SERVICE_NAME: 'vm-agent',
      OWN: 'instance',
      SERVER_UUID: '4c4c4544-0000-0000-0000-000000000001',
      INSTANCE_UUID: inst,
      ZONE_UUID: inst,
    });
    expect(first.body.manifests).toEqual([]);
    expect(first.etag).toMatch(/^[0-9a-f]{40}$/);
    const again = await getConfig(sapi, inst, { 'if-none-match': first.etag! });
    expect(again.status).toBe(304);

    await call(sapi, 'updateApplication', app.uuid, { metadata: { NEW_KEY: 'x' } });
    const changed = await getConfig(sapi, inst, { 'if-none-match': first.etag! });
    expect(changed.status).toBe(200);
    expect(changed.body.metadata.NEW_KEY).toBe('x');
    expect(changed.etag).not.toBe(first.etag);
  });

  it('applies update, delete and replace to the metadata; refuses an unknown action', async () => {
    const updated = (await call<Obj>(sapi, 'updateService', svc.uuid, { action: 'update', metadata: { A: 1, B: 2 } })) as Obj;
    expect(updated.metadata).toMatchObject({ SERVICE_NAME: 'vm-agent', A: 1, B: 2 });
    const deleted = (await call<Obj>(sapi, 'updateService', svc.uuid, { action: 'delete', metadata: { A: true } })) as Obj;
    expect(deleted.metadata.A).toBeUndefined();
    expect(deleted.metadata.B).toBe(2);
    const replaced = (await call<Obj>(sapi, 'updateInstance', inst, { action: 'replace', metadata: { ONLY: 'this' } })) as Obj;
    expect(replaced.metadata).toEqual({ ONLY: 'this' });
    const err = await callError(sapi, 'updateApplication', app.uuid, { action: 'merge', metadata: {} });
    expect(err.statusCode).toBe(409);
    expect(err.body).toEqual({ code: 'InvalidArgument', message: 'invalid action' });
  });

  it("serves an instance's manifests from its service, and keeps manifests across a restart", async () => {
    const m = (await call<Obj>(sapi, 'createManifest', { name: 'm1', path: '/etc/m1', template: '{{x}}', post_cmd: 'true' })) as Obj;
    expect(await call(sapi, 'getManifest', m.uuid)).toEqual(m);
    await call(sapi, 'updateService', svc.uuid, { manifests: { m1: m.uuid } });
    expect((await getConfig(sapi, inst)).body.manifests).toEqual([m]);
    sapi.close();
    await service.stop();
    await service.start({ host: '127.0.0.1', port: 0 });
    sapi = new SAPI({ url: service.url, version: '~2', log, agent: false });
    expect((await getConfig(sapi, inst)).body.manifests).toEqual([m]);
    const missing = await callError(sapi, 'getConfig', newUuid());
    expect(missing.statusCode).toBe(404);
    expect(missing.body?.code).toBe('ResourceNotFound');
    const noKeys = await callError(sapi, 'post', '/manifests', { name: 'x' });
    expect(noKeys.statusCode).toBe(409);
    expect(noKeys.body).toEqual({ code: 'MissingParameter', message: 'missing required keys: path, template' });
  });
});
