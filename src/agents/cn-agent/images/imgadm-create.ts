/**
 * What `imgadm -E create -m <manifest> -c <compression> <vm> --publish <imgapi>` does on a
 * SmartOS CN, for machine_create_image (smartos-live src/img/lib/imgadm.js `createImage` and
 * `publishImage`, src/img/lib/errors.js):
 *
 * - the manifest: `{v: 2, uuid}` under the given one, the origin image's type, os,
 *   requirements (and the other inherited fields), `requirements.min_platform` of this CN for
 *   SmartOS zones, `requirements.brand` for bhyve, kvm and lx, `requirements.bootrom` for
 *   bhyve, `origin` for an incremental image; then the minimal-manifest check;
 * - the file: a stand-in for the compressed `zfs send` stream (this CN holds no data), whose
 *   size and sha1 go into `files[0]`;
 * - the publish: AdminImportImage, AddImageFile (then the returned size and sha1 are
 *   checked), ActivateImage; a failure after the import deletes the half-published image.
 *
 * Failures are imgadm's errors, which the task reports as their JSON (what `-E` prints).
 */
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { HttpStatusError } from '../../../common/http-client.js';
import { newUuid } from '../../../common/uuid.js';
import type { Vm } from '../../../vmadm/types.js';
import type { TaskContext } from '../types.js';
import { ImgapiWriter } from './imgapi-writes.js';

/** An imgadm error: `code` and `message` as `imgadm -E` reports them. */
export class ImgadmError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly errorName = `${code}Error`,
  ) {
    super(message);
    this.name = errorName;
  }

  /** What the task reports: the error object of imgadm's structured last line. */
  toJSON(): Record<string, string> {
    return { message: this.message, name: this.errorName, code: this.code };
  }
}

/** imgadm's VALID_COMPRESSIONS. */
export const IMGADM_COMPRESSIONS = ['none', 'bzip2', 'gzip', 'xz'] as const;

/** The fields an image inherits from its origin (imgadm's INHERITED_FIELDS). */
const INHERITED_FIELDS = [
  'type',
  'os',
  'requirements',
  'users',
  'billing_tags',
  'traits',
  'generate_passwords',
  'inherited_directories',
  'nic_driver',
  'disk_driver',
  'cpu_type',
  'image_size',
];

/** imgadm's SET_REQUIREMENTS_BRAND_BRANDS. */
const BRAND_REQUIRING_BRANDS = ['bhyve', 'lx', 'kvm'];

/** imgmanifest's minimal manifest (validateMinimalManifest). */
const MINIMAL_FIELDS = ['v', 'uuid', 'name', 'version', 'type', 'os'];

export interface CreateImageOptions {
  vm: Vm;
  manifest: Record<string, unknown>;
  compression: string;
  incremental: boolean;
  imgapiUrl: string;
}

/** The image a VM was made from: the boot disk's for HVM brands, else `image_uuid`. */
export function originOf(vm: Vm): string | undefined {
  if (vm.brand === 'bhyve' || vm.brand === 'kvm') {
    const disk = vm.disks?.[0];
    return typeof disk?.image_uuid === 'string' ? disk.image_uuid : undefined;
  }
  return typeof vm.image_uuid === 'string' ? vm.image_uuid : undefined;
}

/** The origin's manifest: the one this CN imported, else IMGAPI's; undefined when neither has it. */
async function originManifest(ctx: TaskContext, uuid: string, imgapiUrl: string): Promise<Record<string, unknown> | undefined> {
  const installed = ctx.state.images.get(uuid)?.manifest;
  if (installed && typeof installed.type === 'string') return installed;
  try {
    const res = await ctx.env.http.call<Record<string, unknown>>({
      method: 'GET',
      url: `${trimSlash(imgapiUrl)}/images/${uuid}`,
      timeoutMs: 30_000,
    });
    return typeof res.body === 'object' && res.body !== null ? res.body : undefined;
  } catch (err) {
    if (err instanceof HttpStatusError && err.statusCode === 404) return undefined;
    throw clientError(imgapiUrl, err);
  }
}

/** The manifest imgadm create builds (gatherManifest + validateManifest). */
export async function buildManifest(ctx: TaskContext, o: CreateImageOptions): Promise<Record<string, unknown>> {
  const m: Record<string, unknown> = { v: 2, uuid: newUuid(), ...o.manifest };
  const vm = o.vm;
  const originUuid = originOf(vm);
  const origin = originUuid ? await originManifest(ctx, originUuid, o.imgapiUrl) : undefined;
  if (origin) {
    ctx.log.info('Inheriting from origin image %s (%s %s)', origin.uuid, origin.name, origin.version);
    for (const field of INHERITED_FIELDS) {
      if (Object.prototype.hasOwnProperty.call(m, field) || !Object.prototype.hasOwnProperty.call(origin, field)) continue;
      const val = origin[field];
      if (!Array.isArray(val) || val.length > 0) m[field] = structuredClone(val);
    }
  }
  const given = (o.manifest.requirements ?? {}) as Record<string, unknown>;
  const requirements = (): Record<string, unknown> => {
    if (typeof m.requirements !== 'object' || m.requirements === null) m.requirements = {};
    return m.requirements as Record<string, unknown>;
  };
  if ((vm.brand === 'joyent' || vm.brand === 'joyent-minimal') && given.min_platform === undefined) {
    // A SmartOS image runs on this platform or later (SmartOS's binary compatibility).
    const sysinfo = ctx.cn.sysinfo;
    requirements().min_platform = { [String(sysinfo['SDC Version'] ?? '7.0')]: String(sysinfo['Live Image'] ?? '') };
  }
  if (BRAND_REQUIRING_BRANDS.includes(vm.brand) && !Object.prototype.hasOwnProperty.call(given, 'brand')) {
    requirements().brand = vm.brand;
  }
  if (vm.brand === 'bhyve' && typeof vm.bootrom === 'string' && !Object.prototype.hasOwnProperty.call(given, 'bootrom')) {
    requirements().bootrom = vm.bootrom;
  }
  if (o.incremental) {
    if (!origin || !originUuid) {
      throw new ImgadmError('VmHasNoOrigin', `cannot create an incremental image: vm "${vm.uuid}" has no origin`);
    }
    m.origin = originUuid;
  }
  const missing = MINIMAL_FIELDS.filter((f) => m[f] === undefined || m[f] === null);
  if (missing.length > 0) {
    throw new ImgadmError('ManifestValidation', `invalid manifest: ${missing.map((f) => `${f} (MissingParameter)`).join(', ')}`);
  }
  ctx.log.info({ manifest: m }, 'Manifest');
  return m;
}

const MiB = 1024 * 1024;

/**
 * The stand-in for the compressed send stream of the VM's dataset: a small header naming
 * what it stands for, then random data (as incompressible as a compressed stream), a few
 * MiB: an incremental image is smaller, an HVM one larger.
 */
export async function buildImageFile(vm: Vm, manifest: Record<string, unknown>, compression: string, incremental: boolean) {
  const hvm = vm.brand === 'bhyve' || vm.brand === 'kvm';
  const size = incremental ? MiB / 2 : hvm ? 8 * MiB : 2 * MiB;
  const header = Buffer.from(
    `${JSON.stringify({ mockcloud: 'image file stand-in', image: manifest.uuid, vm: vm.uuid, brand: vm.brand, incremental })}\n`,
  );
  const stream = Buffer.concat([header, randomBytes(Math.max(0, size - header.length))]);
  let data: Buffer;
  switch (compression) {
    case 'gzip':
      data = await promisify(zlib.gzip)(stream);
      break;
    case 'none':
      data = stream;
      break;
    default:
      // No bzip2 or xz encoder here: the format's magic, then the stand-in, undecodable as
      // it would be useless anyway (a mock CN never receives an image's stream).
      data = Buffer.concat([Buffer.from(compression === 'bzip2' ? 'BZh9' : '\xfd7zXZ\x00', 'latin1'), stream]);
  }
  return { data, size: data.length, sha1: createHash('sha1').update(data).digest('hex') };
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** imgadm's `_errorFromClientError`: IMGAPI's coded errors keep their code. */
function clientError(url: string, err: unknown): ImgadmError {
  if (err instanceof HttpStatusError) {
    const body = err.body as { code?: unknown; message?: unknown; errors?: { field: string; code: string; message?: string }[] } | undefined;
    if (body && typeof body.code === 'string' && typeof body.message === 'string') {
      let message = body.message;
      for (const e of Array.isArray(body.errors) ? body.errors : []) {
        message += `\n    ${e.field}: ${e.code}${e.message ? `: ${e.message}` : ''}`;
      }
      return new ImgadmError(body.code, `${url}: ${message}`, 'APIError');
    }
    return new ImgadmError('InternalError', err.message, 'InternalError');
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ImgadmError('ClientError', `${url}: ${message}`, 'ClientError');
}

/** imgadm publish: import, add the file (and check it), activate; roll back on failure. */
export async function publishImage(
  ctx: TaskContext,
  imgapiUrl: string,
  manifest: Record<string, unknown>,
  file: { data: Buffer; size: number; sha1: string },
  compression: string,
): Promise<Record<string, unknown>> {
  const imgapi = new ImgapiWriter({ http: ctx.env.http, imgapiUrl, reqId: ctx.reqId, signal: ctx.signal });
  const uuid = String(manifest.uuid);
  try {
    await imgapi.importImage(uuid, manifest);
  } catch (err) {
    throw clientError(imgapiUrl, err);
  }
  ctx.log.info('Imported image %s (%s, %s, state=unactivated)', uuid, manifest.name, manifest.version);
  try {
    let added: unknown;
    try {
      added = await imgapi.addFile(uuid, { compression, sha1: file.sha1 }, file.data, 300_000);
    } catch (err) {
      throw clientError(imgapiUrl, err);
    }
    const got = (added as { files?: { sha1?: string; size?: number }[] }).files?.[0];
    if (got?.sha1 !== file.sha1) throw new ImgadmError('UploadError', `sha1 expected to be ${file.sha1}, but was ${got?.sha1}`);
    if (got?.size !== file.size) throw new ImgadmError('UploadError', `size expected to be ${file.size}, but was ${got?.size}`);
    ctx.log.info('Added file (compression "%s") to image %s', compression, uuid);
    let activated: Record<string, unknown>;
    try {
      activated = (await imgapi.activate(uuid)) as Record<string, unknown>;
    } catch (err) {
      throw clientError(imgapiUrl, err);
    }
    ctx.log.info('Activated image %s', uuid);
    return activated;
  } catch (err) {
    ctx.log.debug({ err }, 'rollback partially imported image');
    await imgapi
      .deleteImage(uuid)
      .catch((delErr: unknown) => ctx.log.warn({ err: delErr }, 'Warning: Could not delete partially published image %s', uuid));
    throw err;
  }
}
