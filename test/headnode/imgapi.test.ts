/**
 * The dev IMGAPI, with sdc-clients' IMGAPI class (real Triton client code): the seeded
 * catalogue and its filters, GetImage, GetImageFile with size, sha1 and MD5 checked, agent
 * tarballs with the layout cn-agent's agent_install checks, and stable uuids and files
 * across a restart.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { list as tarList, extract as tarExtract } from 'tar';
import { createQuietLogger } from '../../src/common/log.js';
import { BUILTIN_AGENTS } from '../../src/mockcn/agents-dir.js';
import { ImgapiService } from '../../src/headnode/imgapi/index.js';
import { HeadnodeStore } from '../../src/headnode/store.js';
import { call, callError, type Client } from './helpers/sdc-clients.js';
import { http } from './helpers/napi-env.js';

const require = createRequire(import.meta.url);
const { IMGAPI } = require('sdc-clients') as { IMGAPI: new (o: object) => Client };

interface Env {
  dir: string;
  service: ImgapiService;
  client: Client;
}

async function start(dir: string): Promise<Env> {
  const log = createQuietLogger('imgapi-test');
  const service = new ImgapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }) });
  await service.start({ host: '127.0.0.1', port: 0 });
  return { dir, service, client: new IMGAPI({ url: service.url, agent: false, log }) };
}

async function stop(env: Env): Promise<void> {
  env.client.client?.close?.();
  env.client.rawClient?.close?.();
  await env.service.stop();
}

describe('dev IMGAPI', () => {
  let env: Env;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-imgapi-'));
    env = await start(dir);
  });

  afterAll(async () => {
    if (env) await stop(env);
    await rm(dir, { recursive: true, force: true });
  });

  it('lists a zone image, a bhyve image and one image per agent, with filters', async () => {
    const all = await call(env.client, 'listImages', {});
    const zone = all.filter((i: { type: string }) => i.type === 'zone-dataset');
    expect(zone.length).toBeGreaterThanOrEqual(1);
    expect(zone[0]).toMatchObject({ name: 'base-64-lts', os: 'smartos', state: 'active', disabled: false, v: 2 });
    const bhyve = all.find((i: { type: string }) => i.type === 'zvol');
    expect(bhyve).toMatchObject({ os: 'linux', requirements: { brand: 'bhyve' } });
    expect(typeof bhyve.image_size).toBe('number');
    for (const a of BUILTIN_AGENTS) {
      const img = all.find((i: { name: string }) => i.name === a.name);
      expect(img).toMatchObject({ uuid: a.imageUuid, version: a.version, type: 'other', state: 'active' });
    }
    for (const img of all) {
      expect(img.files).toHaveLength(1);
      expect(img.files[0]).toMatchObject({ compression: 'gzip' });
      expect(img.files[0].sha1).toMatch(/^[0-9a-f]{40}$/);
      expect(img.files[0].size).toBeGreaterThan(0);
    }

    const byName = await call(env.client, 'listImages', { name: 'net-agent' });
    expect(byName.map((i: { name: string }) => i.name)).toEqual(['net-agent']);
    const byType = await call(env.client, 'listImages', { type: 'zvol' });
    expect(byType.every((i: { type: string }) => i.type === 'zvol')).toBe(true);
    expect(byType.length).toBeGreaterThan(0);
    const byOs = await call(env.client, 'listImages', { os: 'smartos' });
    expect(byOs.map((i: { uuid: string }) => i.uuid)).toEqual(zone.map((i: { uuid: string }) => i.uuid));
    const substring = await call(env.client, 'listImages', { name: '~agent' });
    expect(substring.map((i: { name: string }) => i.name).sort()).toEqual(
      BUILTIN_AGENTS.map((a) => a.name).filter((n) => n.includes('agent')).sort(),
    );
    expect(await call(env.client, 'listImages', { state: 'disabled' })).toEqual([]);

    const badState = await callError(env.client, 'listImages', { state: 'bogus' });
    expect(badState.statusCode).toBe(422);
    expect(badState.body?.code).toBe('InvalidParameter');

    // Paging with limit and marker reaches every image exactly once.
    const first = await call(env.client, 'listImages', { limit: 2 });
    expect(first).toHaveLength(2);
    const rest = await http(`${env.service.url}/images?marker=${first[1].uuid}`);
    expect(rest.body[0].uuid).toBe(first[1].uuid);
    expect([...first, ...rest.body.slice(1)].map((i: { uuid: string }) => i.uuid)).toEqual(all.map((i: { uuid: string }) => i.uuid));
  });

  it('gets one image, 404 for unknown or malformed uuids', async () => {
    const [img] = await call(env.client, 'listImages', { name: 'base-64-lts' });
    expect(await call(env.client, 'getImage', img.uuid)).toEqual(img);
    const missing = await callError(env.client, 'getImage', randomUUID());
    expect(missing.statusCode).toBe(404);
    expect(missing.body?.code).toBe('ResourceNotFound');
    const r = await http(`${env.service.url}/images/not-a-uuid`);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 'ResourceNotFound', message: '/images/not-a-uuid does not exist' });
  });

  it('serves every image file with its manifest size and sha1 (and the Content-MD5 sdc-clients checks)', async () => {
    const all = await call(env.client, 'listImages', {});
    for (const img of all) {
      const file = path.join(dir, `${img.uuid}.download`);
      await call(env.client, 'getImageFile', img.uuid, file);
      const data = await readFile(file);
      expect(data.length).toBe(img.files[0].size);
      expect(createHash('sha1').update(data).digest('hex')).toBe(img.files[0].sha1);
      expect(data.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b])); // gzip
    }
    const head = await http(`${env.service.url}/images/${all[0].uuid}/file`);
    expect(head.headers.get('content-length')).toBe(String(all[0].files[0].size));
    expect(head.headers.get('etag')).toBe(all[0].files[0].sha1);
    const notModified = await http(`${env.service.url}/images/${all[0].uuid}/file`, { headers: { 'if-none-match': all[0].files[0].sha1 } });
    expect(notModified.status).toBe(304);
  });

  it('ships agent tarballs with <name>/image_uuid and <name>/package.json as agent_install expects', async () => {
    for (const a of BUILTIN_AGENTS) {
      const [img] = await call(env.client, 'listImages', { name: a.name });
      const tarball = path.join(dir, `${a.name}.tar.gz`);
      await call(env.client, 'getImageFile', img.uuid, tarball);
      const entries: string[] = [];
      await tarList({ file: tarball, onReadEntry: (e) => entries.push(e.path) });
      // agent_install takes the first path component of the first entry as the base dir.
      expect(entries[0]!.split('/')[0]).toBe(a.name);
      expect(entries).toContain(`${a.name}/image_uuid`);
      expect(entries).toContain(`${a.name}/package.json`);

      const out = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-agent-'));
      try {
        await tarExtract({ file: tarball, cwd: out }, [`${a.name}/image_uuid`, `${a.name}/package.json`]);
        expect((await readFile(path.join(out, a.name, 'image_uuid'), 'utf8')).trim()).toBe(img.uuid);
        const pkg = JSON.parse(await readFile(path.join(out, a.name, 'package.json'), 'utf8'));
        expect(pkg).toMatchObject({ name: a.name, version: img.version });
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    }
  });

  it('keeps uuids, sizes and sha1s across a restart, and regenerates a damaged file identically', async () => {
    const before = await call(env.client, 'listImages', {});
    await stop(env);
    const agent = before.find((i: { type: string }) => i.type === 'other');
    await writeFile(env.service.fileOf(agent.uuid), 'damaged');
    env = await start(dir);
    const after = await call(env.client, 'listImages', {});
    expect(after).toEqual(before);
    const file = path.join(dir, 'again.tar.gz');
    await call(env.client, 'getImageFile', agent.uuid, file);
    expect(createHash('sha1').update(await readFile(file)).digest('hex')).toBe(agent.files[0].sha1);
  });

  it('builds byte-identical files in a fresh data dir', async () => {
    const other = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-imgapi-'));
    const env2 = await start(other);
    try {
      const a = await call(env.client, 'listImages', {});
      const b = await call(env2.client, 'listImages', {});
      expect(b.map((i: { uuid: string; files: unknown }) => [i.uuid, i.files])).toEqual(a.map((i: { uuid: string; files: unknown }) => [i.uuid, i.files]));
    } finally {
      await stop(env2);
      await rm(other, { recursive: true, force: true });
    }
  });
});
