/**
 * The dev IMGAPI's write endpoints, the ones `imgadm publish` (and so cn-agent's
 * machine_create_image) drives, following sdc-imgapi lib/images.js:
 *
 * - CreateImage `POST /images` (no action): a new unactivated image with a fresh uuid;
 *   `?action=create-from-vm` is create-from-vm.ts;
 * - AdminImportImage `POST /images/:uuid?action=import`: the image with the manifest's own
 *   uuid, unactivated (a `creating` placeholder of that uuid is replaced, any other image
 *   of that uuid is ImageUuidAlreadyExists); the unset owner becomes the DC's admin;
 * - AddImageFile `PUT /images/:uuid/file?compression=..[&sha1=..]`: the file, streamed to
 *   disk with its size, sha1 and MD5 checked against `Content-Length` and `sha1`;
 * - ActivateImage `POST /images/:uuid?action=activate`: needs a file, sets `published_at`;
 * - UpdateImage `POST /images/:uuid?action=update`: the mutable fields, and (unactivated only,
 *   as docker build uses it) `uuid`, `origin` and the digests of `files`: a new uuid moves the
 *   image and its file;
 * - DeleteImage `DELETE /images/:uuid`: refused while another image names it as its origin.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fsyncDir } from '../../common/durable-file.js';
import { MockcloudError } from '../../common/errors.js';
import { isUuid } from '../../common/uuid.js';
import { body, noContent, ok, query, type Reply, type Req } from '../http.js';
import { calcState, isActivated, isImgapiUuid } from './access.js';
import { fieldErr, imgapiError, imgapiErrors } from './errors.js';
import { FILE_COMPRESSIONS, serializeImage, UNSET_OWNER_UUID, type FileCompression, type ImageManifest } from './images.js';
import { invalidParameter, newImage, validationFailed } from './manifest-input.js';

/** IMGAPI's MAX_IMAGE_SIZE (20 GiB). */
const MAX_IMAGE_SIZE = 20 * 1024 * 1024 * 1024;

/** What the write endpoints need of the service's catalogue. */
export interface ImageCatalogue {
  readonly adminUuid: string;
  get(uuid: string): ImageManifest | undefined;
  all(): Iterable<ImageManifest>;
  /** Store (or replace) a manifest and make the catalogue durable. */
  put(m: ImageManifest): Promise<void>;
  remove(uuid: string): Promise<void>;
  fileOf(uuid: string): string;
}

function bodyObject(req: Req, what: string): Record<string, unknown> {
  const b = body(req);
  if (typeof b !== 'object' || b === null || Array.isArray(b)) {
    throw validationFailed(`missing request body (${what})`, [{ field: 'body', code: 'MissingParameter', message: `missing ${what}` }]);
  }
  return { ...(b as Record<string, unknown>) };
}

function actionOf(req: Req): string | undefined {
  const a = query(req).action;
  return typeof a === 'string' ? a : undefined;
}

function invalidAction(action: string | undefined): MockcloudError {
  return action === undefined
    ? invalidParameter('no image "action" was specified', [fieldErr('action', 'MissingParameter')])
    : invalidParameter(`"${action}" is not a valid action`, [fieldErr('action', 'Invalid')]);
}

export function alreadyExists(uuid: string): MockcloudError {
  return new MockcloudError('Conflict', `image uuid "${uuid}" already exists`, { restCode: 'ImageUuidAlreadyExists' });
}

function upload(code: 'Upload' | 'Download', message: string): MockcloudError {
  return new MockcloudError('BadRequest', message, { restCode: code });
}

async function ensureOrigin(cat: ImageCatalogue, origin: string | undefined): Promise<void> {
  if (origin !== undefined && !cat.get(origin)) {
    throw new MockcloudError('InvalidParameters', `origin image "${origin}" does not exist`, { restCode: 'OriginDoesNotExist' });
  }
}

/** `POST /images`. */
export async function createImage(cat: ImageCatalogue, req: Req, newUuid: () => string): Promise<Reply> {
  const action = actionOf(req);
  if (action !== undefined) throw invalidAction(action);
  const data = bodyObject(req, 'image manifest');
  const account = query(req).account;
  if (typeof account === 'string') {
    if (!isUuid(account)) throw invalidParameter(`invalid "account": not a UUID: "${account}"`, [{ field: 'account', code: 'Invalid', message: 'not a UUID' }]);
    if (data.owner === undefined) data.owner = account;
    else if (data.owner !== account) {
      throw invalidParameter(`invalid owner: given owner, "${String(data.owner)}", does not match account, "${account}"`, [
        { field: 'owner', code: 'Invalid', message: 'does not match account' },
      ]);
    }
  }
  if (data.state !== undefined) {
    throw validationFailed('invalid image data: "state"', [{ field: 'state', code: 'NotAllowed', message: 'Parameter cannot be set' }]);
  }
  delete data.channels;
  await ensureOrigin(cat, typeof data.origin === 'string' ? data.origin : undefined);
  const m = newImage(data, newUuid(), false);
  await cat.put(m);
  return ok(serializeImage(m));
}

/** `POST /images/:uuid?action=import` (without `source`). */
export async function adminImportImage(cat: ImageCatalogue, req: Req): Promise<Reply> {
  const uuid = String(req.params.uuid);
  if (query(req).account !== undefined) throw imgapiErrors.operatorOnly();
  const data = bodyObject(req, 'image manifest');
  if (data.uuid !== uuid) {
    throw invalidParameter(`URL UUID, "${uuid}" and body UUID, "${String(data.uuid)}" do not match`, [
      { field: 'uuid', code: 'Invalid', message: 'does not match the URL' },
    ]);
  }
  delete data.channels;
  const existing = cat.get(uuid);
  if (existing && existing.state !== 'creating') throw alreadyExists(uuid);
  await ensureOrigin(cat, typeof data.origin === 'string' ? data.origin : undefined);
  // 'dc' mode: an image published with the unset owner belongs to the DC's admin.
  if (data.owner === UNSET_OWNER_UUID) data.owner = cat.adminUuid;
  const m = newImage(data, uuid, true);
  await cat.put(m);
  return ok(serializeImage(m));
}

/** `POST /images/:uuid?action=activate`. */
export async function activateImage(cat: ImageCatalogue, m: ImageManifest): Promise<Reply> {
  if (isActivated(m)) {
    throw new MockcloudError('InvalidParameters', `image "${m.uuid}" is already activated`, { restCode: 'ImageAlreadyActivated' });
  }
  if (m.files.length === 0) {
    throw new MockcloudError('InvalidParameters', `image "${m.uuid}" cannot be activated: it has no file`, {
      restCode: 'NoActivationNoFile',
    });
  }
  return save(cat, { ...m, state: calcState(true, m.disabled), published_at: m.published_at ?? new Date().toISOString() });
}

/** Stores the changed image and answers it, as each write endpoint does. */
async function save(cat: ImageCatalogue, next: ImageManifest): Promise<Reply> {
  await cat.put(next);
  return ok(serializeImage(next));
}

/** The POST /images/:uuid actions the dev IMGAPI serves. */
export function imageAction(req: Req): 'import' | 'activate' | 'update' | 'enable' | 'disable' | 'export' {
  const action = actionOf(req);
  if (action === 'import' && query(req).source === undefined) return 'import';
  if (action === 'activate' || action === 'update' || action === 'enable' || action === 'disable' || action === 'export') return action;
  throw invalidAction(action);
}

/** ExportImage (apiExportImage): Manta only; a DC without Manta refuses it once the path is checked. */
export function exportImage(req: Req): never {
  const mpath = query(req).manta_path;
  if (mpath === undefined) {
    throw imgapiErrors.validationFailed("missing 'manta_path' prefix parameter", [fieldErr('manta_path', 'MissingParameter')]);
  }
  const user = path.posix.normalize(String(mpath)).split('/')[1];
  if (!user) throw imgapiErrors.invalidParameter('invalid manta_path prefix, not a valid manta path', [fieldErr('manta_path', 'Invalid')]);
  throw imgapiError('StorageUnsupported', 'storage type is unsupported');
}

/** EnableImage / DisableImage (apiEnableDisableImage): the state follows (`Image._calcState`). */
export async function enableDisableImage(cat: ImageCatalogue, m: ImageManifest, action: 'enable' | 'disable'): Promise<Reply> {
  const disabled = action === 'disable';
  return save(cat, { ...m, disabled, state: calcState(isActivated(m), disabled) });
}

/**
 * AddImageAcl / RemoveImageAcl `POST /images/:uuid/acl?action=add|remove` (apiAddImageAcl and
 * apiRemoveImageAcl check the body alike): a list of uuids added to or taken from the acl; a
 * removal from an image with no acl changes nothing.
 */
export async function changeImageAcl(cat: ImageCatalogue, m: ImageManifest, req: Req): Promise<Reply> {
  const action = actionOf(req);
  if (action !== undefined && action !== 'add' && action !== 'remove') {
    throw imgapiErrors.invalidParameter(`"${action}" is not a valid action`, [fieldErr('action', 'Invalid')]);
  }
  const list = body(req);
  if (!Array.isArray(list)) throw imgapiErrors.invalidParameter('invalid image "acl" (not an array)', [fieldErr('acl', 'Invalid')]);
  list.forEach((uuid, i) => {
    if (!isImgapiUuid(uuid)) {
      throw imgapiErrors.invalidParameter(`invalid image "acl" (item ${i} is not a UUID): ${String(uuid)}`, [fieldErr('acl', 'Invalid')]);
    }
  });
  const uuids = list as string[];
  if (action !== 'remove') return save(cat, { ...m, acl: [...(m.acl ?? []), ...uuids.filter((u, i) => !m.acl?.includes(u) && uuids.indexOf(u) === i)] });
  if (m.acl === undefined) return ok(serializeImage(m));
  return save(cat, { ...m, acl: m.acl.filter((u) => !uuids.includes(u)) });
}

/** imgmanifest's `mutable` fields (node-imgmanifest lib/imgmanifest.js). */
const UPDATEABLE = new Set([
  'owner', 'name', 'version', 'description', 'homepage', 'eula', 'public', 'os', 'acl', 'requirements', 'users',
  'billing_tags', 'traits', 'tags', 'generate_passwords', 'inherited_directories', 'nic_driver', 'disk_driver',
  'cpu_type', 'image_size', 'channels',
]);
/** Operator-only; `files`, `origin` and `uuid` only on an unactivated image (apiUpdateImage). */
const ADMIN_ONLY = new Set(['state', 'error', 'billing_tags', 'traits', 'files', 'origin', 'uuid']);

/** `POST /images/:uuid?action=update`, as sdc-imgapi lib/images.js apiUpdateImage. */
export async function updateImage(cat: ImageCatalogue, m: ImageManifest, req: Req): Promise<Reply> {
  const data = body(req);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw validationFailed('missing request body', [{ field: 'body', code: 'MissingParameter', message: 'missing' }]);
  }
  const fields = data as Record<string, unknown>;
  const keys = Object.keys(fields);
  if (keys.length === 0) throw validationFailed('invalid image update data: no parameters provided', []);
  const activated = isActivated(m);
  const errs: { field: string; code: string; message: string }[] = [];
  for (const key of keys) {
    if (!UPDATEABLE.has(key) && !ADMIN_ONLY.has(key)) errs.push({ field: key, code: 'NotAllowed', message: 'Parameter cannot be updated' });
  }
  for (const key of ADMIN_ONLY) {
    if (fields[key] === undefined) continue;
    if (query(req).account !== undefined) {
      errs.push({ field: key, code: 'NotAllowed', message: 'Can only be updated by operators' });
    } else if ((key === 'uuid' || key === 'origin' || key === 'files') && activated) {
      errs.push({ field: key, code: 'NotAllowed', message: 'Can only be updated on unactivated images' });
    } else if (key === 'files') {
      const file0 = (Array.isArray(fields.files) ? fields.files[0] : undefined) as Record<string, unknown> | undefined;
      const have = m.files[0] as unknown as Record<string, unknown> | undefined;
      for (const [k, v] of Object.entries(file0 ?? {})) {
        if (k !== 'digest' && k !== 'uncompressedDigest' && v !== have?.[k]) {
          errs.push({ field: key, code: 'NotAllowed', message: 'Can only update "digest" or "uncompressedDigest" fields on files' });
        }
      }
    }
  }
  if (errs.length > 0) throw validationFailed(`invalid image update data: ${errs.map((e) => e.field).join(', ')}`, errs);

  const next: Record<string, unknown> = { ...m };
  for (const key of keys) {
    if (key === 'files') {
      const file0 = (fields.files as Record<string, unknown>[])[0] ?? {};
      next.files = m.files.map((f, i) =>
        i === 0
          ? {
              ...f,
              ...(file0.digest ? { digest: file0.digest } : {}),
              ...(file0.uncompressedDigest ? { uncompressedDigest: file0.uncompressedDigest } : {}),
            }
          : f,
      );
    } else if (fields[key] === null) {
      delete next[key];
    } else {
      next[key] = fields[key];
    }
  }
  const uuid = next.uuid;
  if (!isUuid(uuid)) throw validationFailed('invalid image update data: uuid', [{ field: 'uuid', code: 'Invalid', message: 'not a UUID' }]);
  await ensureOrigin(cat, typeof next.origin === 'string' ? next.origin : undefined);
  const updated = next as unknown as ImageManifest;
  if (uuid !== m.uuid) {
    if (cat.get(uuid)) throw alreadyExists(uuid);
    // The file moves with the image (Image.moveFileToImage), then the old record goes.
    if (m.files.length > 0) {
      await fsp.mkdir(path.dirname(cat.fileOf(uuid)), { recursive: true });
      await fsp.rename(cat.fileOf(m.uuid), cat.fileOf(uuid));
      await fsyncDir(path.dirname(cat.fileOf(uuid)));
    }
    await cat.put(updated);
    await cat.remove(m.uuid);
    await fsp.rm(path.dirname(cat.fileOf(m.uuid)), { recursive: true, force: true });
  } else {
    await cat.put(updated);
  }
  return ok(serializeImage(updated));
}

/** `PUT /images/:uuid/file`: the request body is the file (never parsed: octet-stream). */
export async function addImageFile(cat: ImageCatalogue, m: ImageManifest, req: Req): Promise<Reply> {
  if (isActivated(m)) {
    req.resume();
    throw new MockcloudError('InvalidParameters', `cannot modify files on activated image ${m.uuid}`, { restCode: 'ImageFilesImmutable' });
  }
  const q = query(req);
  const compression = q.compression;
  if (!compression) {
    req.resume();
    throw invalidParameter('missing "compression"', [{ field: 'compression', code: 'Missing', message: 'missing' }]);
  }
  if (typeof compression !== 'string' || !(FILE_COMPRESSIONS as readonly string[]).includes(compression)) {
    req.resume();
    throw invalidParameter(`invalid compression "${String(compression)}" (must be one of ${FILE_COMPRESSIONS.join(', ')})`, [
      { field: 'compression', code: 'Invalid', message: 'unknown compression' },
    ]);
  }
  const lengthHeader = req.headers['content-length'];
  const contentLength = lengthHeader !== undefined && !Number.isNaN(Number(lengthHeader)) ? Number(lengthHeader) : undefined;
  if (contentLength !== undefined && contentLength > MAX_IMAGE_SIZE) {
    req.resume();
    throw upload('Upload', `image file size ${contentLength} (from Content-Length) exceeds the maximum allowed size, 20 GiB`);
  }

  const final = cat.fileOf(m.uuid);
  const dir = path.dirname(final);
  await fsp.mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.file0.${randomBytes(6).toString('hex')}.tmp`);
  const sha1 = createHash('sha1');
  const md5 = createHash('md5');
  let size = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > MAX_IMAGE_SIZE) {
        cb(upload('Upload', 'image file size exceeds the maximum allowed size, 20 GiB'));
        return;
      }
      sha1.update(chunk);
      md5.update(chunk);
      cb(null, chunk);
    },
  });
  try {
    const out = createWriteStream(tmp, { mode: 0o644 });
    await pipeline(req, meter, out);
    if (size === 0) throw upload('Download', 'image file size is 0 bytes, empty files are not allowed');
    if (contentLength !== undefined && size !== contentLength) {
      throw upload('Download', `"Content-Length" header, ${contentLength}, does not match uploaded size, ${size}`);
    }
    const digest = sha1.digest('hex');
    if (typeof q.sha1 === 'string' && q.sha1 !== digest) {
      throw upload('Download', `"sha1" hash, ${q.sha1}, does not match the uploaded file sha1 hash, ${digest}`);
    }
    const fd = await fsp.open(tmp, 'r+');
    try {
      await fd.sync();
    } finally {
      await fd.close();
    }
    // Activation may have happened while the file streamed in (finishMoveImageFile's check).
    const now = cat.get(m.uuid);
    if (!now) throw new MockcloudError('ResourceNotFound', `image ${m.uuid} not found`);
    if (isActivated(now)) {
      throw new MockcloudError('InvalidParameters', `image "${m.uuid}" is already activated`, { restCode: 'ImageAlreadyActivated' });
    }
    await fsp.rename(tmp, final);
    await fsyncDir(dir);
    const next: ImageManifest = {
      ...now,
      files: [
        {
          sha1: digest,
          size,
          compression: compression as FileCompression,
          contentMD5: md5.digest('base64'),
          mtime: new Date().toISOString(),
          ...(typeof q.dataset_guid === 'string' && q.dataset_guid ? { dataset_guid: q.dataset_guid } : {}),
        },
      ],
    };
    await cat.put(next);
    return ok(serializeImage(next));
  } catch (err) {
    await fsp.unlink(tmp).catch(() => undefined);
    throw err;
  }
}

/** `DELETE /images/:uuid`. */
export async function deleteImage(cat: ImageCatalogue, m: ImageManifest): Promise<Reply> {
  const dependents = [...cat.all()].filter((x) => x.origin === m.uuid).map((x) => x.uuid);
  if (dependents.length > 0) {
    const summary = dependents.length < 10 ? dependents.join(', ') : `${dependents.slice(0, 5).join(', ')}, and ${dependents.length - 5} more...`;
    throw imgapiError('ImageHasDependentImages', `image "${m.uuid}" has ${dependents.length} dependent incremental image(s): ${summary}`);
  }
  await cat.remove(m.uuid);
  await fsp.rm(path.dirname(cat.fileOf(m.uuid)), { recursive: true, force: true });
  return noContent();
}
