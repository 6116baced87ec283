/**
 * CloneImage's rollback (sdc-imgapi lib/images.js apiCloneImage removes the copies it made when
 * a later step fails): a copy it cannot remove is logged at WARN with its uuid, and the caller
 * gets the failure that stopped the clone, not the rollback's. The store's failure cannot be
 * caused over HTTP, so this drives cloneImage with a catalogue whose removals fail.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import bunyan from 'bunyan';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloneImage } from '../../src/headnode/imgapi/clone.js';
import type { ImageManifest } from '../../src/headnode/imgapi/images.js';
import type { ImageCatalogue } from '../../src/headnode/imgapi/writes.js';
import type { Req } from '../../src/headnode/http.js';

const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';
const VADER = '86055c40-2547-11e2-8a6b-4bb37edc84ba';
const LUKE = '91ba0e64-2547-11e2-a972-df579e5fddb3';
const BASE = '2b7a1d3e-6a8f-4c1e-9d3b-0b0e5c6f7a81';
const IMAGE = '6e1d2f4a-3b5c-4d7e-8f90-1a2b3c4d5e6f';

describe('CloneImage rollback', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-clone-rollback-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("logs a copy it cannot remove at WARN with the copy's uuid and answers the clone's own failure", async () => {
    const manifest = (uuid: string, extra: Partial<ImageManifest>): ImageManifest => ({
      v: 2, uuid, owner: VADER, name: 'mc-clone', version: '1.0.0', state: 'active', disabled: false, public: false,
      type: 'zone-dataset', os: 'smartos', files: [{ sha1: 'x', size: 5, compression: 'none', contentMD5: 'x', mtime: '2026-01-01T00:00:00.000Z' }],
      ...extra,
    });
    // VADER's base (a copy on the way) and the image shared with LUKE on it; the image's file
    // is missing, so the second copy fails after the first one was stored.
    const images = new Map<string, ImageManifest>([
      [BASE, manifest(BASE, {})],
      [IMAGE, manifest(IMAGE, { origin: BASE, acl: [LUKE] })],
    ]);
    const fileOf = (uuid: string): string => path.join(dir, uuid, 'file0');
    await mkdir(path.dirname(fileOf(BASE)), { recursive: true });
    await writeFile(fileOf(BASE), 'base\n');
    const stored: string[] = [];
    const cat: ImageCatalogue = {
      adminUuid: ADMIN,
      get: (uuid) => images.get(uuid),
      all: () => images.values(),
      put: async (m) => {
        stored.push(m.uuid);
        images.set(m.uuid, m);
      },
      remove: async () => {
        throw new Error('store is read-only');
      },
      fileOf,
    };
    const ring = new bunyan.RingBuffer({ limit: 50 });
    const log = bunyan.createLogger({ name: 'clone-rollback-test', streams: [{ level: 'warn', type: 'raw', stream: ring }] });
    const req = { query: { account: LUKE } } as unknown as Req;
    let n = 0;
    const newUuid = (): string => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;

    const failure = await cloneImage(cat, images.get(IMAGE)!, req, newUuid, log).then(
      () => undefined,
      (err: unknown) => err as NodeJS.ErrnoException,
    );
    expect(failure?.code).toBe('ENOENT');
    expect(stored).toEqual(['00000000-0000-4000-8000-000000000001']);
    const warned = (ring.records as { level: number; image_uuid?: string; msg: string }[]).filter((r) => r.level === bunyan.WARN);
    expect(warned.map((r) => r.image_uuid)).toContain(stored[0]);
    expect(warned.some((r) => /rollback/.test(r.msg))).toBe(true);
  });
});
