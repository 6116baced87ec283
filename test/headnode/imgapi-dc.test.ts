/**
 * The dev IMGAPI's 'dc'-mode endpoints and behaviours sdc-imgapi's own dc tests exercise,
 * black box through sdc-clients' IMGAPI class and plain HTTP: `ping?error=` (lib/app.js),
 * DisableImage / EnableImage, an account's access (reqGetImage, NotImageOwner), CloneImage
 * (test/image-clone.dc-test.js), a v1 `.dsmanifest` import upgraded with imgmanifest's rules
 * (test/adminimportimage.dc-test.js), the admin fields (`inclAdminFields`: files[].stor) and
 * import-lxd-image's errors (lib/lxd.js, test/adminimportlxdimage.dc-test.js).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { ImgapiService } from '../../src/headnode/imgapi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { call, callError, type Client } from './helpers/sdc-clients.js';

const require = createRequire(import.meta.url);
const { IMGAPI } = require('sdc-clients') as { IMGAPI: new (o: object) => Client };

const VADER = '86055c40-2547-11e2-8a6b-4bb37edc84ba';
const LUKE = '91ba0e64-2547-11e2-a972-df579e5fddb3';
type Obj = Record<string, any>;

describe('dev IMGAPI, dc mode', () => {
  const log = createQuietLogger('imgapi-dc-test');
  let dir: string;
  let service: ImgapiService;
  let client: Client;
  let file: string;

  const post = async (url: string, body?: unknown): Promise<{ status: number; type: string | null; text: string }> => {
    const res = await fetch(`${service.url}${url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };

  /** An active image of `owner`, imported with a file, as an operator does. */
  async function activeImage(extra: Obj = {}): Promise<Obj> {
    const uuid = randomUUID();
    await call(client, 'adminImportImage', { v: 2, uuid, name: 'mc-test', version: '1.0.0', type: 'zone-dataset', os: 'smartos', owner: VADER, ...extra }, {});
    await call(client, 'addImageFile', { uuid, file, compression: 'none' });
    return call(client, 'activateImage', uuid);
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-imgapi-dc-'));
    file = path.join(dir, 'file0');
    await writeFile(file, 'file\n');
    service = new ImgapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }) });
    await service.start({ host: '127.0.0.1', port: 0 });
    client = new IMGAPI({ url: service.url, agent: false, log });
  });

  afterAll(async () => {
    client?.client?.close?.();
    await service?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers ping?error=NAME with the sample of that error, as lib/app.js apiPing does', async () => {
    expect(await call<Obj>(client, 'ping')).toMatchObject({ ping: 'pong' });
    const failed = await callError(client, 'ping', 'ValidationFailed');
    expect(failed.statusCode).toBe(422);
    expect(failed.body).toEqual({ code: 'ValidationFailed', message: 'boom', errors: [] });
    expect((await callError(client, 'ping', 'ImageNotShared')).body).toEqual({
      code: 'InternalError',
      message: 'do not have a sample "ImageNotSharedError" error',
    });
    expect((await callError(client, 'ping', 'Bogus')).body).toEqual({
      code: 'InvalidParameter',
      message: 'unknown error: BogusError',
      errors: [{ field: 'error', code: 'Missing' }],
    });
    expect((await callError(client, 'ping', '')).body).toEqual({ code: 'InternalError', message: 'boom' });
  });

  it('disables and enables an image, its owner only when an account asks', async () => {
    const img = await activeImage({ public: true });
    const disabled = await call<Obj>(client, 'disableImage', img.uuid, VADER);
    expect(disabled).toMatchObject({ disabled: true, state: 'disabled' });
    expect((await call<Obj>(client, 'getImage', img.uuid)).state).toBe('disabled');
    const enabled = await call<Obj>(client, 'enableImage', img.uuid);
    expect(enabled).toMatchObject({ disabled: false, state: 'active' });
    // An account asking for disabled images gets only its own (apiListImages).
    await call(client, 'disableImage', img.uuid);
    const asVader = await call<Obj[]>(client, 'listImages', { state: 'disabled', account: VADER });
    expect(asVader.map((i) => i.uuid)).toContain(img.uuid);
    expect(await call<Obj[]>(client, 'listImages', { state: 'disabled', account: LUKE })).toEqual([]);
    await call(client, 'enableImage', img.uuid);
    const stranger = await callError(client, 'disableImage', img.uuid, LUKE);
    expect(stranger.statusCode).toBe(422);
    expect(stranger.body).toEqual({ code: 'NotImageOwner', message: `account ${LUKE} is not the owner of image ${img.uuid}` });
    expect((await call<Obj>(client, 'getImage', img.uuid)).disabled).toBe(false);
  });

  it('deletes for an account only its own image: 404 where it may not see it, NotImageOwner where it may (DeleteImage)', async () => {
    const del = async (uuid: string, account: string): Promise<{ status: number; body: unknown }> => {
      const res = await fetch(`${service.url}/images/${uuid}?account=${account}`, { method: 'DELETE' });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const exists = async (uuid: string): Promise<boolean> => (await fetch(`${service.url}/images/${uuid}`)).status === 200;
    // reqGetImage first: a private image another account owns is not found, as for a GET.
    const hidden = await activeImage();
    expect(await del(hidden.uuid, LUKE)).toEqual({ status: 404, body: { code: 'ResourceNotFound', message: 'image not found' } });
    expect(await exists(hidden.uuid)).toBe(true);
    // One it may read (public) is refused by reqEnsureAccountIsImageOwner.
    const shown = await activeImage({ public: true });
    expect(await del(shown.uuid, LUKE)).toEqual({
      status: 422,
      body: { code: 'NotImageOwner', message: `account ${LUKE} is not the owner of image ${shown.uuid}` },
    });
    expect(await exists(shown.uuid)).toBe(true);
    expect((await del(hidden.uuid, VADER)).status).toBe(204);
    expect(await exists(hidden.uuid)).toBe(false);
  });

  it('clones a shared image for the account it is shared with, as test/image-clone.dc-test.js expects', async () => {
    const shared = await activeImage({ public: false, acl: [LUKE] });
    const publicOne = await activeImage({ public: true });
    // A private image an account cannot see is a 404; one not shared with it ImageNotShared.
    const hidden = await callError(client, 'cloneImage', shared.uuid, randomUUID());
    expect([hidden.statusCode, hidden.body?.code]).toEqual([404, 'ResourceNotFound']);
    const notShared = await callError(client, 'cloneImage', publicOne.uuid, LUKE);
    expect([notShared.statusCode, notShared.body?.code]).toEqual([422, 'ImageNotShared']);
    expect((await callError(client, 'cloneImage', shared.uuid, VADER)).body?.code).toBe('ImageNotShared');
    const noAccount = await post(`/images/${shared.uuid}/clone`);
    expect(noAccount.status).toBe(422);
    expect(JSON.parse(noAccount.text)).toMatchObject({ code: 'InvalidParameter' });

    const clone = await call<Obj>(client, 'cloneImage', shared.uuid, LUKE);
    expect(clone.uuid).not.toBe(shared.uuid);
    expect(clone).toMatchObject({ owner: LUKE, name: shared.name, version: shared.version, state: 'active', files: shared.files });
    expect(clone).not.toHaveProperty('acl');
    const again = await call<Obj>(client, 'cloneImage', shared.uuid, LUKE);
    expect(again.uuid).not.toBe(clone.uuid);
    // A clone is not shared with anyone: cloning it again is refused.
    expect((await callError(client, 'cloneImage', clone.uuid, LUKE)).body?.code).toBe('ImageNotShared');
    await call(client, 'deleteImage', clone.uuid, LUKE);
    await call(client, 'deleteImage', again.uuid, LUKE);
  });

  it('imports a v1 .dsmanifest upgraded with imgmanifest (owner, public, published_at, files)', async () => {
    // test/fauxnodejs-1.4.0.dsmanifest's shape: a DSAPI (v1) manifest.
    const uuid = randomUUID();
    const ds = {
      name: 'fauxnodejs', version: '1.4.0', type: 'zone-dataset', description: 'Node.js Image with MongoDB',
      published_at: '2012-10-11T14:40:57.936Z', os: 'smartos',
      files: [{ path: 'nodejs-1.4.0.zfs.bz2', sha1: 'd2c40995ff693994e0343a661fb2279794546748', size: 269634973, url: 'https://datasets.joyent.com/x' }],
      requirements: { networks: [{ name: 'net0', description: 'public' }] },
      users: [{ name: 'root' }, { name: 'admin' }], generate_passwords: true, inherited_directories: ['/opt/node_service'],
      uuid, creator_uuid: LUKE, vendor_uuid: LUKE, creator_name: 'sdc', platform_type: 'smartos', cloud_name: 'sdc',
      urn: 'sdc:sdc:nodejs:1.4.0', created_at: '2012-10-11T14:40:57.936Z', updated_at: '2012-10-11T14:40:57.936Z',
    };
    const img = await call<Obj>(client, 'adminImportImage', ds, { skipOwnerCheck: true });
    expect(img).toMatchObject({
      v: 2, uuid, owner: LUKE, public: true, disabled: false, state: 'unactivated', published_at: ds.published_at,
      inherited_directories: ['/opt/node_service'], urn: 'sdc:sdc:nodejs:1.4.0', generate_passwords: true, files: [],
    });
    expect(img).not.toHaveProperty('creator_uuid');
    await call(client, 'addImageFile', { uuid, file, compression: 'bzip2' });
    expect((await call<Obj>(client, 'activateImage', uuid)).state).toBe('active');
    // A manifest without "v" and without creator_uuid is not upgradable: refused as before.
    const bare = await callError(client, 'adminImportImage', { uuid: randomUUID(), name: 'x', version: '1', type: 'zone-dataset', os: 'smartos', owner: LUKE, creator_name: 'x' }, {});
    expect(bare.statusCode).toBe(422);
  });

  it('shows the admin fields (files[].stor) only with inclAdminFields, and refuses a bad value', async () => {
    const img = await activeImage({ public: true });
    const plain = await call<Obj>(client, 'getImage', img.uuid);
    expect(plain.files[0]).not.toHaveProperty('stor');
    const admin = await call<Obj>(client, 'getImage', img.uuid, undefined, { inclAdminFields: true });
    expect(admin.files[0]).toMatchObject({ sha1: img.files[0].sha1, stor: 'local' });
    const listed = await call<Obj[]>(client, 'listImages', {}, { inclAdminFields: true });
    expect(listed.length).toBeGreaterThan(0);
    for (const i of listed) for (const f of i.files) expect(f.stor).toBe('local');
    const bad = await fetch(`${service.url}/images/${img.uuid}?inclAdminFields=yes`);
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({
      code: 'InvalidParameter',
      message: 'invalid value for "inclAdminFields" param: "yes" is not a boolean',
      errors: [{ field: 'inclAdminFields', code: 'Invalid' }],
    });
  });

  it("answers import-lxd-image's checks as lib/lxd.js does, and past them streams the failure; nothing is made", async () => {
    const before = (await call<Obj[]>(client, 'listImages', { state: 'all' })).length;
    const noAlias = await post('/images?action=import-lxd-image');
    expect(noAlias.status).toBe(422);
    expect(JSON.parse(noAlias.text)).toEqual({ code: 'ValidationFailed', message: 'missing parameters', errors: [{ field: 'alias', code: 'MissingParameter' }] });
    const user = await post(`/images?action=import-lxd-image&alias=images:alpine/3.16&account=${VADER}`);
    expect(user.status).toBe(403);
    expect(JSON.parse(user.text)).toEqual({ code: 'OperatorOnly', message: 'this endpoint may only be called by an operator' });
    const format = await post('/images?action=import-lxd-image&alias=alpine');
    expect(JSON.parse(format.text)).toMatchObject({ code: 'InvalidParameter', message: 'alias must be in the format "registry:image"' });
    const registry = await post('/images?action=import-lxd-image&alias=nope:alpine');
    expect(registry.status).toBe(200);
    expect(JSON.parse(registry.text.trim())).toEqual({
      type: 'error',
      id: 'nope:alpine',
      alias: 'nope:alpine',
      error: { code: 'InvalidParameter', message: 'No registry found for "nope" - valid registries are "images, ubuntu"' },
    });
    const remote = await post('/images?action=import-lxd-image&alias=images:alpine/3.16');
    expect(remote.status).toBe(200);
    expect(JSON.parse(remote.text.trim())).toMatchObject({ type: 'error', id: 'images:alpine/3.16', error: { code: 'RemoteSourceError' } });
    expect((await call<Obj[]>(client, 'listImages', { state: 'all' })).length).toBe(before);
  });
});
