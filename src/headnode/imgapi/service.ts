/**
 * The dev headnode's IMGAPI: ListImages, GetImage and GetImageFile over a small seeded
 * catalogue (see images.ts), and the writes `imgadm publish` makes (writes.ts). Manifests live in the headnode store ("imgapi"), files under
 * `<data-dir>/headnode/imgapi/images/<uuid>/file0`. At start every seed image's file is
 * checked (size and sha1) and regenerated when missing or damaged; generation is
 * reproducible, so an image's uuid, size and sha1 stay the same across restarts.
 */
import { createReadStream, promises as fsp } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { writeFileDurable } from '../../common/durable-file.js';
import { MockcloudError } from '../../common/errors.js';
import { failureFields, type Logger } from '../../common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../common/triton-defaults.js';
import { isUuid } from '../../common/uuid.js';
import { closeServer, createServer, listen, route, type Req, type Reply, type RestifyServer } from '../http.js';
import type { HeadnodeStore, StateDocument } from '../store.js';
import { buildTarball } from './build.js';
import { matches, seedImages, serializeImage, type ImageManifest, type ListFilter } from './images.js';
import { activateImage, addImageFile, adminImportImage, createImage, deleteImage, imageAction, updateImage, type ImageCatalogue } from './writes.js';

export interface ImgapiServiceOptions {
  log: Logger;
  store: HeadnodeStore;
  /** Owner of the agent images (the DC's admin user). */
  adminUuid?: string;
}

interface ImgapiDoc {
  version: 1;
  images: ImageManifest[];
}

export const IMGAPI_DOC = 'imgapi';
const LIST_STATES = ['active', 'disabled', 'unactivated', 'all', 'creating', 'failed'];

export class ImgapiService {
  private readonly log: Logger;
  private readonly store: HeadnodeStore;
  private readonly adminUuid: string;
  private readonly images = new Map<string, ImageManifest>();
  private doc: StateDocument | undefined;
  private server: RestifyServer | undefined;
  private _url: string | undefined;

  constructor(opts: ImgapiServiceOptions) {
    this.log = opts.log.child({ component: 'imgapi' });
    this.store = opts.store;
    this.adminUuid = opts.adminUuid ?? DEFAULT_ADMIN_UUID;
  }

  get url(): string {
    if (!this._url) throw new Error('IMGAPI is not started');
    return this._url;
  }

  /** The manifests (wire form), e.g. for picking an image to provision. */
  list(filter: ListFilter = {}): Record<string, unknown>[] {
    return this.sorted().filter((m) => matches(m, filter)).map(serializeImage);
  }

  fileOf(uuid: string): string {
    return path.join(this.store.dir, 'imgapi', 'images', uuid, 'file0');
  }

  async start(opts: { host: string; port: number }): Promise<void> {
    if (this.server) throw new Error('IMGAPI is already started');
    const doc = this.store.document(IMGAPI_DOC, (): ImgapiDoc => ({ version: 1, images: this.sorted() }));
    const stored = (await doc.load()) as ImgapiDoc | undefined;
    this.images.clear();
    if (stored !== undefined) {
      if (stored.version !== 1 || !Array.isArray(stored.images)) throw new Error('the stored IMGAPI state is not a version 1 document');
      for (const m of stored.images) this.images.set(m.uuid, m);
    }
    let changed = stored === undefined;
    for (const seed of seedImages(this.adminUuid)) {
      const have = this.images.get(seed.manifest.uuid);
      if (have && (await this.fileIntact(have))) continue;
      const built = await buildTarball(seed.tree);
      const file = this.fileOf(seed.manifest.uuid);
      await fsp.mkdir(path.dirname(file), { recursive: true });
      await writeFileDurable(file, built.data);
      this.images.set(seed.manifest.uuid, {
        ...seed.manifest,
        files: [{ sha1: built.sha1, size: built.size, compression: 'gzip', contentMD5: built.md5, mtime: new Date().toISOString() }],
      });
      changed = true;
      this.log.info({ image: seed.manifest.uuid, imageName: seed.manifest.name, size: built.size }, 'IMGAPI: generated image file');
    }
    if (changed) await doc.save();
    this.doc = doc;

    const server = createServer({ name: 'imgapi', log: this.log });
    this.mountRoutes(server);
    this._url = await listen(server, opts.host, opts.port);
    this.server = server;
    this.log.info({ url: this._url, images: this.images.size }, 'IMGAPI listening');
  }

  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    this.server = undefined;
    this._url = undefined;
    if (this.doc) await this.doc.flush().catch((err: unknown) => this.log.error(failureFields(err), 'saving IMGAPI state failed'));
    this.doc = undefined;
  }

  private sorted(): ImageManifest[] {
    return [...this.images.values()].sort((a, b) => {
      const pa = a.published_at ?? '';
      const pb = b.published_at ?? '';
      return pa < pb ? -1 : pa > pb ? 1 : a.uuid < b.uuid ? -1 : 1;
    });
  }

  /** The catalogue as the write endpoints use it: every change is durable before the answer. */
  private catalogueView(): ImageCatalogue {
    return {
      adminUuid: this.adminUuid,
      get: (uuid) => this.images.get(uuid),
      all: () => this.images.values(),
      put: async (m) => {
        this.images.set(m.uuid, m);
        await this.doc?.save();
      },
      remove: async (uuid) => {
        this.images.delete(uuid);
        await this.doc?.save();
      },
      fileOf: (uuid) => this.fileOf(uuid),
    };
  }

  private async fileIntact(m: ImageManifest): Promise<boolean> {
    const f = m.files[0];
    if (!f) return false;
    try {
      const data = await fsp.readFile(this.fileOf(m.uuid));
      return data.length === f.size && createHash('sha1').update(data).digest('hex') === f.sha1;
    } catch {
      return false;
    }
  }

  /** `reqValidUuid`. */
  private validUuid(req: Req): string {
    const uuid = String(req.params.uuid);
    if (!isUuid(uuid) || uuid !== uuid.toLowerCase()) throw new MockcloudError('ResourceNotFound', `${req.url} does not exist`);
    return uuid;
  }

  /** `reqValidUuid` + `reqGetImage`. */
  private imageFor(req: Req): ImageManifest {
    const uuid = this.validUuid(req);
    const m = this.images.get(uuid);
    if (!m) throw new MockcloudError('ResourceNotFound', `image ${uuid} not found`);
    return m;
  }

  private mountRoutes(server: RestifyServer): void {
    const r = (fn: Parameters<typeof route>[1]) => route(this.log, fn);
    server.get('/ping', r(() => ({ status: 200, body: { ping: 'pong', pid: process.pid, version: '4.13.1', imgapi: true } })));
    server.get('/images', r((req) => ({ status: 200, body: this.listImages(req) })));
    const getImage = r((req) => {
      const body = serializeImage(this.imageFor(req));
      const etag = createHash('sha1').update(JSON.stringify(body), 'utf8').digest('hex');
      return notModified(req, etag) ?? { status: 200, body, headers: { Etag: etag } };
    });
    server.get('/images/:uuid', getImage);
    server.head('/images/:uuid', getImage);
    const getFile = r(async (req, res) => {
      const m = this.imageFor(req);
      const index = Number.parseInt(String((req.query as Record<string, unknown> | undefined)?.index ?? '0'), 10) || 0;
      if (m.files.length === 0) throw new MockcloudError('ResourceNotFound', `image "${m.uuid}" has no file`);
      const f = m.files[index];
      if (!f) throw new MockcloudError('ResourceNotFound', `image "${m.uuid}" has no file at index ${index}`);
      const cond = notModified(req, f.sha1);
      if (cond) return cond;
      res.writeHead(200, {
        Etag: f.sha1,
        'Last-Modified': new Date(f.mtime).toUTCString(),
        'Content-Length': String(f.size),
        'Content-Type': 'application/octet-stream',
        'Content-MD5': f.contentMD5,
      });
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      await pipeline(createReadStream(this.fileOf(m.uuid)), res);
    });
    server.get('/images/:uuid/file', getFile);
    server.head('/images/:uuid/file', getFile);

    const cat = this.catalogueView();
    server.post('/images', r((req) => createImage(cat, req, randomUUID)));
    server.post(
      '/images/:uuid',
      r((req) => {
        this.validUuid(req);
        // AdminImportImage runs before the image is looked up: it must not exist yet.
        const action = imageAction(req);
        if (action === 'import') return adminImportImage(cat, req);
        return action === 'update' ? updateImage(cat, this.imageFor(req), req) : activateImage(cat, this.imageFor(req));
      }),
    );
    server.put('/images/:uuid/file', r((req) => addImageFile(cat, this.imageFor(req), req)));
    server.del('/images/:uuid', r((req) => deleteImage(cat, this.imageFor(req))));
  }

  private listImages(req: Req): Record<string, unknown>[] {
    const q = (req.query ?? {}) as Record<string, unknown>;
    const str = (k: string): string | undefined => (typeof q[k] === 'string' ? (q[k] as string) : undefined);
    const state = str('state');
    if (state !== undefined && !LIST_STATES.includes(state)) {
      throw invalidParameter(`invalid state: "${state}"`, 'state');
    }
    let limit: number | undefined;
    if (q.limit !== undefined) {
      limit = Number(q.limit);
      if (Number.isNaN(limit)) throw invalidParameter(`invalid limit: "${String(q.limit)}"`, 'state');
    }
    let isPublic: boolean | undefined;
    if (q.public !== undefined) {
      if (q.public !== 'true' && q.public !== 'false') throw invalidParameter(`invalid value for "public" param: "${String(q.public)}"`, 'public');
      isPublic = q.public === 'true';
    }
    const tags: [string, string][] = [];
    for (const [k, v] of Object.entries(q)) {
      const m = /^tag\.(.*)$/.exec(k);
      if (m) tags.push([m[1]!, String(v)]);
    }
    const filter: ListFilter = { tags };
    if (state !== undefined) filter.state = state;
    for (const k of ['name', 'version', 'owner', 'os', 'type'] as const) {
      const v = str(k);
      if (v !== undefined) filter[k] = v;
    }
    if (isPublic !== undefined) filter.public = isPublic;
    let images = this.sorted().filter((m) => matches(m, filter));
    const marker = str('marker');
    if (marker !== undefined) {
      const at = images.findIndex((m) => m.uuid === marker);
      // Inclusive, as IMGAPI's marker is (sdc-clients drops the repeated first entry).
      if (at >= 0) images = images.slice(at);
    }
    images = images.slice(0, limit !== undefined && limit > 0 ? Math.min(limit, 1000) : 1000);
    return images.map(serializeImage);
  }
}

function invalidParameter(message: string, field: string): MockcloudError {
  return new MockcloudError('InvalidParameters', message, { restCode: 'InvalidParameter', errors: [{ field, code: 'Invalid', message }] });
}

/** restify conditionalRequest's If-None-Match for GET/HEAD. */
function notModified(req: Req, etag: string): Reply | undefined {
  const h = req.headers['if-none-match'];
  if (!h) return undefined;
  const tags = h.split(/\s*,\s*/).map((t) => t.replace(/^W\//, '').replace(/^"(\w*)"$/, '$1'));
  return tags.some((t) => t === '*' || t === etag) ? { status: 304, headers: { Etag: etag } } : undefined;
}
