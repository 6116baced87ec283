/**
 * The dev IMGAPI's write endpoints, driven by sdc-clients' IMGAPI class in the order
 * `imgadm publish` uses them (smartos-live src/img/lib/imgadm.js `publishImage`:
 * adminImportImage, addImageFile with size and sha1, activateImage, deleteImage to roll
 * back), with IMGAPI's answers as sdc-imgapi lib/images.js gives them (apiAdminImportImage,
 * apiAddImageFile, apiActivateImage, apiCreateImage, apiDeleteImage) and its error codes
 * (lib/errors.js).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import bunyan from 'bunyan';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { ImgapiService } from '../../src/headnode/imgapi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { call, callError, raw, type Client } from './helpers/sdc-clients.js';

const require = createRequire(import.meta.url);
const { IMGAPI } = require('sdc-clients') as { IMGAPI: new (o: object) => Client };

const OWNER = '7b1a5e2c-3f4d-4e8a-9c61-0d2b3a4f5e6d';

interface Env {
  service: ImgapiService;
  client: Client;
}

async function start(dir: string): Promise<Env> {
  const log = createQuietLogger('imgapi-publish-test');
  const service = new ImgapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }) });
  await service.start({ host: '127.0.0.1', port: 0 });
  return { service, client: new IMGAPI({ url: service.url, agent: false, log }) };
}

async function stop(env: Env): Promise<void> {
  env.client.client?.close?.();
  env.client.rawClient?.close?.();
  await env.service.stop();
}

function manifest(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 2,
    uuid: randomUUID(),
    owner: OWNER,
    name: 'my-image',
    version: '1.0.0',
    type: 'zone-dataset',
    os: 'smartos',
    requirements: { min_platform: { '7.0': '20240101T000000Z' } },
    ...extra,
  };
}

describe('dev IMGAPI: publishing an image as imgadm does', () => {
  let dir: string;
  let env: Env;
  let file: string;
  let data: Buffer;
  let sha1: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-imgapi-pub-'));
    env = await start(dir);
    data = randomBytes(300_000);
    sha1 = createHash('sha1').update(data).digest('hex');
    file = path.join(dir, 'image.zfs.gz');
    await writeFile(file, data);
  });

  afterAll(async () => {
    if (env) await stop(env);
    await rm(dir, { recursive: true, force: true });
  });

  it('imports, adds the file and activates: the image ends active with its file and published_at', async () => {
    const m = manifest({ files: [{ sha1, size: data.length, compression: 'gzip' }] });
    const imported = await call(env.client, 'adminImportImage', m);
    expect(imported).toMatchObject({ uuid: m.uuid, owner: OWNER, name: 'my-image', version: '1.0.0', state: 'unactivated', files: [] });
    expect(imported.published_at).toBeUndefined();
    // Not active yet: the default listing leaves it out, state=unactivated finds it.
    expect((await call(env.client, 'listImages', {})).map((i: { uuid: string }) => i.uuid)).not.toContain(m.uuid);
    expect((await call(env.client, 'listImages', { state: 'unactivated' })).map((i: { uuid: string }) => i.uuid)).toContain(m.uuid);

    const withFile = await call(env.client, 'addImageFile', { uuid: m.uuid, file, size: data.length, compression: 'gzip', sha1 });
    expect(withFile.files).toEqual([{ sha1, size: data.length, compression: 'gzip' }]);

    const active = await call(env.client, 'activateImage', m.uuid);
    expect(active).toMatchObject({ uuid: m.uuid, state: 'active', disabled: false });
    expect(Date.parse(active.published_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(await call(env.client, 'getImage', m.uuid)).toEqual(active);
    expect((await call(env.client, 'listImages', { owner: OWNER })).map((i: { uuid: string }) => i.uuid)).toContain(m.uuid);

    const back = path.join(dir, 'back.gz');
    await call(env.client, 'getImageFile', m.uuid, back);
    expect(createHash('sha1').update(await readFile(back)).digest('hex')).toBe(sha1);

    // An activated image keeps its files, and cannot be activated or imported again.
    const immutable = await callError(env.client, 'addImageFile', { uuid: m.uuid, file, compression: 'gzip' });
    expect([immutable.statusCode, immutable.body?.code]).toEqual([422, 'ImageFilesImmutable']);
    const again = await callError(env.client, 'activateImage', m.uuid);
    expect([again.statusCode, again.body?.code]).toEqual([422, 'ImageAlreadyActivated']);
    const dup = await callError(env.client, 'adminImportImage', m);
    expect([dup.statusCode, dup.body?.code]).toEqual([409, 'ImageUuidAlreadyExists']);
  });

  // sdc-imgapi lib/images.js apiUpdateImage, as sdc-cn-agent's docker build uses it for each
  // layer (lib/backends/smartos/bin/docker-build.js): the placeholder takes the layer's final
  // uuid and digests while unactivated, its file moving with it.
  it('UpdateImage moves an unactivated image to a new uuid with its file; refuses what imgmanifest does not let change', async () => {
    const m = manifest();
    await call(env.client, 'adminImportImage', m);
    await call(env.client, 'addImageFile', { uuid: m.uuid, file, size: data.length, compression: 'gzip', sha1 });
    const finalUuid = randomUUID();
    const updated = await call(env.client, 'updateImage', m.uuid, {
      uuid: finalUuid,
      version: 'abc123',
      tags: { 'docker:id': 'sha256:abc' },
      files: [{ sha1, size: data.length, compression: 'gzip', digest: 'sha256:layer', uncompressedDigest: 'sha256:raw' }],
    });
    expect(updated).toMatchObject({ uuid: finalUuid, version: 'abc123', tags: { 'docker:id': 'sha256:abc' }, state: 'unactivated' });
    // The digests are kept, not shown: Image.serialize gives sha1, size and compression only.
    expect(updated.files).toEqual([{ sha1, size: data.length, compression: 'gzip' }]);
    expect((await callError(env.client, 'getImage', m.uuid)).statusCode).toBe(404);
    expect(await call(env.client, 'activateImage', finalUuid)).toMatchObject({ uuid: finalUuid, state: 'active' });
    const back = path.join(dir, 'moved.gz');
    await call(env.client, 'getImageFile', finalUuid, back);
    expect(createHash('sha1').update(await readFile(back)).digest('hex')).toBe(sha1);

    const locked = await callError(env.client, 'updateImage', finalUuid, { uuid: randomUUID() });
    expect([locked.statusCode, locked.body?.code]).toEqual([422, 'ValidationFailed']);
    expect(locked.body?.errors).toEqual([{ field: 'uuid', code: 'NotAllowed', message: 'Can only be updated on unactivated images' }]);
    const unknown = await callError(env.client, 'updateImage', finalUuid, { published_at: 'x' });
    expect(unknown.body?.errors).toEqual([{ field: 'published_at', code: 'NotAllowed', message: 'Parameter cannot be updated' }]);
    expect(await call(env.client, 'updateImage', finalUuid, { description: 'a layer' })).toMatchObject({ description: 'a layer', state: 'active' });
  });

  it('refuses activation without a file, a file whose sha1 does not match, and bad manifests', async () => {
    const m = manifest();
    await call(env.client, 'adminImportImage', m);
    const noFile = await callError(env.client, 'activateImage', m.uuid);
    expect([noFile.statusCode, noFile.body?.code]).toEqual([422, 'NoActivationNoFile']);

    const badSha = await callError(env.client, 'addImageFile', { uuid: m.uuid, file, compression: 'gzip', sha1: 'f'.repeat(40) });
    expect([badSha.statusCode, badSha.body?.code]).toEqual([400, 'Download']);
    const badCompression = await callError(env.client, 'addImageFile', { uuid: m.uuid, file, compression: 'zip' });
    expect([badCompression.statusCode, badCompression.body?.code]).toEqual([422, 'InvalidParameter']);
    expect((await call(env.client, 'getImage', m.uuid)).files).toEqual([]);

    const missing = await callError(env.client, 'adminImportImage', { v: 2, uuid: randomUUID(), owner: OWNER, type: 'zone-dataset' });
    expect([missing.statusCode, missing.body?.code]).toEqual([422, 'ValidationFailed']);
    expect(missing.body?.errors?.map((e) => e.field).sort()).toEqual(['name', 'os', 'version']);
    const badType = await callError(env.client, 'adminImportImage', manifest({ type: 'floppy' }));
    expect(badType.body?.errors?.[0]).toMatchObject({ field: 'type', code: 'Invalid' });
    const extra = await callError(env.client, 'adminImportImage', manifest({ colour: 'blue' }));
    expect([extra.statusCode, extra.body?.code, extra.body?.message]).toEqual([422, 'InvalidParameter', 'invalid extra parameters: "colour"']);
    const noOrigin = await callError(env.client, 'adminImportImage', manifest({ origin: randomUUID() }));
    expect([noOrigin.statusCode, noOrigin.body?.code]).toEqual([422, 'OriginDoesNotExist']);

    const mismatch = await raw(env.client, 'post', `/images/${randomUUID()}?action=import`, manifest()).catch((e: { statusCode: number; body: { message: string } }) => e);
    expect((mismatch as { statusCode: number }).statusCode).toBe(422);
    expect((mismatch as { body: { message: string } }).body.message).toMatch(/do not match/);
    const unknownAction = await raw(env.client, 'post', `/images/${m.uuid}?action=frobnicate`, {}).catch((e: { body: { message: string } }) => e);
    expect((unknownAction as { body: { message: string } }).body.message).toBe('"frobnicate" is not a valid action');
  });

  it('gives the unset owner to the DC admin on import, as IMGAPI in dc mode does', async () => {
    const m = manifest({ owner: '00000000-0000-0000-0000-000000000000' });
    expect((await call(env.client, 'adminImportImage', m)).owner).toBe(DEFAULT_ADMIN_UUID);
  });

  it('CreateImage makes a fresh uuid; DeleteImage removes an image unless it is an origin', async () => {
    const { uuid: _ignored, ...body } = manifest();
    const created = await call(env.client, 'createImage', body);
    expect(created.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created).toMatchObject({ owner: OWNER, state: 'unactivated' });
    const withUuid = await callError(env.client, 'createImage', manifest());
    expect(withUuid.body?.message).toBe('invalid extra parameters: "uuid"');

    await call(env.client, 'addImageFile', { uuid: created.uuid, file, compression: 'gzip' });
    await call(env.client, 'activateImage', created.uuid);
    const child = manifest({ origin: created.uuid });
    await call(env.client, 'adminImportImage', child);
    const guarded = await callError(env.client, 'deleteImage', created.uuid);
    expect([guarded.statusCode, guarded.body?.code]).toEqual([422, 'ImageHasDependentImages']);

    await call(env.client, 'deleteImage', child.uuid);
    await call(env.client, 'deleteImage', created.uuid);
    const gone = await callError(env.client, 'getImage', created.uuid);
    expect(gone.statusCode).toBe(404);
  });

  it('keeps a published image and its file across a restart', async () => {
    const m = manifest();
    await call(env.client, 'adminImportImage', m);
    await call(env.client, 'addImageFile', { uuid: m.uuid, file, compression: 'gzip', sha1 });
    const active = await call(env.client, 'activateImage', m.uuid);
    await stop(env);
    env = await start(dir);
    expect(await call(env.client, 'getImage', m.uuid)).toEqual(active);
    const back = path.join(dir, 'after-restart.gz');
    await call(env.client, 'getImageFile', m.uuid, back);
    expect((await readFile(back)).equals(data)).toBe(true);
  });
});

describe('dev IMGAPI: an upload its client drops half-way', () => {
  it('is logged at WARN (the client went away), not as a failed request at ERROR, and leaves no temp file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-imgapi-abort-'));
    const ring = new bunyan.RingBuffer({ limit: 100 });
    const log = bunyan.createLogger({ name: 'imgapi-abort-test', streams: [{ level: 'warn', type: 'raw', stream: ring }] });
    const service = new ImgapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }) });
    await service.start({ host: '127.0.0.1', port: 0 });
    try {
      const m = manifest();
      const imported = await fetch(`${service.url}/images/${String(m.uuid)}?action=import`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(m),
      });
      expect(imported.status, await imported.clone().text()).toBe(200);
      const u = new URL(service.url);
      const sock = net.connect(Number(u.port), u.hostname);
      await new Promise((r) => sock.once('connect', r));
      sock.on('error', () => undefined);
      sock.write(
        `PUT /images/${String(m.uuid)}/file?compression=gzip HTTP/1.1\r\nhost: x\r\ncontent-type: application/octet-stream\r\ncontent-length: ${8 * 1024 * 1024}\r\n\r\n`,
      );
      sock.write(Buffer.alloc(1024 * 1024, 1));
      await new Promise((r) => setTimeout(r, 200));
      sock.destroy();
      const records = (): { level: number; msg: string }[] => ring.records as { level: number; msg: string }[];
      const deadline = Date.now() + 5000;
      while (!records().some((r) => /client went away/.test(r.msg)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(records().filter((r) => r.level >= bunyan.ERROR)).toEqual([]);
      expect(records().some((r) => r.level === bunyan.WARN && /client went away/.test(r.msg))).toBe(true);
      const images = path.join(dir, 'headnode', 'imgapi', 'images', String(m.uuid));
      expect((await readdir(images).catch(() => [])).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    } finally {
      await service.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
