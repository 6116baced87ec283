/**
 * The dev headnode's IMGAPI in 'dc' mode (sdc-imgapi lib/images.js): ListImages, GetImage
 * and GetImageFile over a small seeded catalogue (see images.ts), with an account's view
 * (access.ts); the writes `imgadm publish` makes (writes.ts); Enable/DisableImage, the ACL,
 * icons (icons.ts), CloneImage (clone.ts); `ping?error=` (errors.ts) and import-lxd-image's
 * checks (lxd.ts). Manifests live in the headnode store ("imgapi"), files under
 * `<data-dir>/headnode/imgapi/images/<uuid>/file0`. At start every seed image's file is
 * checked (size and sha1) and regenerated when missing or damaged; generation is
 * reproducible, so an image's uuid, size and sha1 stay the same across restarts.
 */
import { createReadStream, promises as fsp } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { writeFileDurable } from '../../common/durable-file.js';
import { JsonHttpClient } from '../../common/http-client.js';
import { MockcloudError } from '../../common/errors.js';
import { failureFields, type Logger } from '../../common/log.js';
import { DEFAULT_ADMIN_UUID } from '../../common/triton-defaults.js';
import { closeServer, createServer, listen, route, type Req, type Reply, type RestifyServer } from '../http.js';
import type { HeadnodeStore, StateDocument } from '../store.js';
import { buildTarball } from './build.js';
import { matches, seedImages, serializeImage, type ImageManifest, type ListFilter } from './images.js';
import { boolParam, checkIfMatch, ensureOwner, imageEtag, imageForRequest, notModified, requestAccount, validUuid, visibleTo } from './access.js';
import { cloneImage } from './clone.js';
import { CreateFromVm, type CreateFromVmPeers } from './create-from-vm.js';
import { imgapiErrors, pingError } from './errors.js';
import { addImageIcon, deleteImageIcon, getImageIcon } from './icons.js';
import { adminImportLxdImage } from './lxd.js';
import {
  activateImage,
  addImageFile,
  adminImportImage,
  changeImageAcl,
  createImage,
  deleteImage,
  enableDisableImage,
  exportImage,
  imageAction,
  updateImage,
  type ImageCatalogue,
} from './writes.js';

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
  /** CreateImageFromVm, once the headnode has said where VMAPI, CNAPI and the workflow API are. */
  private createFromVm: CreateFromVm | undefined;
  private http: JsonHttpClient | undefined;

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
    return this.sorted()
      .filter((m) => matches(m, filter))
      .map((m) => serializeImage(m));
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

  /** Where CreateImageFromVm finds the VM, sends the task and runs its job. */
  setPeers(peers: CreateFromVmPeers): void {
    this.http ??= new JsonHttpClient({ maxSockets: 16, timeoutMs: 60_000, userAgent: 'imgapi/4.13.1 (mockcloud)' });
    const trim = (u: string): string => u.replace(/\/+$/, '');
    this.createFromVm = new CreateFromVm({
      http: this.http,
      log: this.log,
      imgapiUrl: () => this.url,
      cat: this.catalogueView(),
      urls: { ...peers, vmapi: trim(peers.vmapi), cnapi: trim(peers.cnapi), napi: trim(peers.napi) },
    });
  }

  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    this.http?.close();
    this.http = undefined;
    this.createFromVm = undefined;
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

  private mountRoutes(server: RestifyServer): void {
    const r = (fn: Parameters<typeof route>[1]) => route(this.log, fn);
    const cat = this.catalogueView();
    const image = (req: Req): ImageManifest => imageForRequest(this.images, req);
    /** reqGetImage + reqEnsureAccountIsImageOwner: a write by an account is its owner's. */
    const ownImage = (req: Req): ImageManifest => {
      const m = image(req);
      ensureOwner(req, m);
      return m;
    };
    server.get(
      '/ping',
      r((req) => {
        const error = (req.query as Record<string, unknown> | undefined)?.error;
        if (error !== undefined) throw pingError(String(error));
        return { status: 200, body: { ping: 'pong', pid: process.pid, version: '4.13.1', imgapi: true } };
      }),
    );
    server.get('/images', r((req) => ({ status: 200, body: this.listImages(req) })));
    const getImage = r((req) => {
      const m = image(req);
      const body = serializeImage(m, { inclAdminFields: boolParam(req, 'inclAdminFields', false) });
      const etag = imageEtag(m);
      return notModified(req, etag) ?? { status: 200, body, headers: { Etag: etag } };
    });
    server.get('/images/:uuid', getImage);
    server.head('/images/:uuid', getImage);
    const getFile = r(async (req, res) => {
      const m = image(req);
      const index = Number.parseInt(String((req.query as Record<string, unknown> | undefined)?.index ?? '0'), 10) || 0;
      if (m.files.length === 0) throw imgapiErrors.notFound(`image "${m.uuid}" has no file`);
      const f = m.files[index];
      if (!f) throw imgapiErrors.notFound(`image "${m.uuid}" has no file at index ${index}`);
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

    server.post(
      '/images',
      r((req, res) => {
        if ((req.query as Record<string, unknown> | undefined)?.action === 'import-lxd-image') {
          adminImportLxdImage(req, res);
          return;
        }
        if ((req.query as Record<string, unknown> | undefined)?.action === 'create-from-vm') {
          if (!this.createFromVm) throw new MockcloudError('ServiceUnavailable', 'Workflow API is down.');
          return this.createFromVm.handle(req, randomUUID);
        }
        return createImage(cat, req, randomUUID);
      }),
    );
    server.post(
      '/images/:uuid',
      r(async (req) => {
        validUuid(req);
        // AdminImportImage runs before the image is looked up: it must not exist yet.
        const action = imageAction(req);
        if (action === 'import') return etagged(await adminImportImage(cat, req));
        const m = ownImage(req);
        if (action === 'export') return exportImage(req);
        checkIfMatch(req, imageEtag(m));
        if (action === 'update') return etagged(await updateImage(cat, m, req));
        if (action === 'enable' || action === 'disable') return etagged(await enableDisableImage(cat, m, action));
        return etagged(await activateImage(cat, m));
      }),
    );
    server.post('/images/:uuid/clone', r((req) => cloneImage(cat, image(req), req, randomUUID, this.log)));
    server.post('/images/:uuid/acl', r(async (req) => etagged(await changeImageAcl(cat, ownImage(req), req))));
    server.put('/images/:uuid/file', r(async (req) => etagged(await addImageFile(cat, ownImage(req), req))));
    server.put('/images/:uuid/icon', r(async (req) => etagged(await addImageIcon(cat, ownImage(req), req))));
    const getIcon = r((req, res) => getImageIcon(cat, image(req), req, res));
    server.get('/images/:uuid/icon', getIcon);
    server.head('/images/:uuid/icon', getIcon);
    server.del('/images/:uuid/icon', r(async (req) => etagged(await deleteImageIcon(cat, ownImage(req)))));
    server.del('/images/:uuid', r((req) => deleteImage(cat, ownImage(req))));
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
    const inclAdminFields = boolParam(req, 'inclAdminFields', false);
    // With `account`, its own images and those activated ones it may see (apiListImages);
    // asked for disabled or unactivated images, only its own.
    const account = requestAccount(req);
    const ownOnly = state === 'disabled' || state === 'unactivated';
    let images = this.sorted().filter(
      (m) => matches(m, filter) && (account === undefined || m.owner === account || (!ownOnly && visibleTo(m, account))),
    );
    const marker = str('marker');
    if (marker !== undefined) {
      const at = images.findIndex((m) => m.uuid === marker);
      // Inclusive, as IMGAPI's marker is (sdc-clients drops the repeated first entry).
      if (at >= 0) images = images.slice(at);
    }
    images = images.slice(0, limit !== undefined && limit > 0 ? Math.min(limit, 1000) : 1000);
    return images.map((m) => serializeImage(m, { inclAdminFields }));
  }
}

function invalidParameter(message: string, field: string): MockcloudError {
  return new MockcloudError('InvalidParameters', message, { restCode: 'InvalidParameter', errors: [{ field, code: 'Invalid', message }] });
}

/** `resSetEtag`: a write that answers the image says its new etag. */
function etagged(reply: Reply): Reply {
  const etag = createHash('sha1').update(JSON.stringify(reply.body), 'utf8').digest('hex');
  return { ...reply, headers: { ...reply.headers, Etag: etag } };
}
