/**
 * A manifest that a client sends the dev IMGAPI (CreateImage, AdminImportImage), upgraded from
 * an older manifest version, checked and turned into a stored, unactivated image the way
 * sdc-imgapi's `Image.create` and the
 * `Image` constructor's validation (lib/images.js, imgmanifest's validators) do: the known
 * manifest fields are kept, `files` and `state` are dropped, anything else is refused as an
 * "invalid extra parameter", and the required fields must be there and valid.
 */
import { createRequire } from 'node:module';
import { MockcloudError, type FieldError } from '../../common/errors.js';
import { isUuid } from '../../common/uuid.js';
import type { ImageManifest } from './images.js';

const require = createRequire(import.meta.url);
/** Triton's own manifest library (node-imgmanifest), as IMGAPI uses it. */
const imgmanifest = require('imgmanifest') as { upgradeManifest(m: Record<string, unknown>): Record<string, unknown> };

/** imgmanifest's VALID_TYPES and VALID_OSES. */
const TYPES = ['zone-dataset', 'zvol', 'lx-dataset', 'docker', 'other'];
const OSES = ['smartos', 'linux', 'windows', 'bsd', 'illumos', 'other'];

/** The manifest fields `Image.create` takes over (anything else is an extra parameter). */
const KNOWN_FIELDS = new Set([
  'v',
  'uuid',
  'icon',
  'error',
  'owner',
  'name',
  'version',
  'description',
  'homepage',
  'eula',
  'type',
  'os',
  'origin',
  'public',
  'disabled',
  'acl',
  'requirements',
  'users',
  'billing_tags',
  'traits',
  'tags',
  'generate_passwords',
  'inherited_directories',
  'channels',
  'nic_driver',
  'disk_driver',
  'cpu_type',
  'image_size',
  'published_at',
  'urn',
  // Dropped without complaint, so a manifest IMGAPI itself served can be sent back.
  'files',
  'state',
]);

/** IMGAPI's InvalidParameter (422). */
export function invalidParameter(message: string, errs: FieldError[]): MockcloudError {
  return new MockcloudError('InvalidParameters', message, { restCode: 'InvalidParameter', errors: errs });
}

/** IMGAPI's ValidationFailed (422). */
export function validationFailed(message: string, errs: FieldError[]): MockcloudError {
  return new MockcloudError('InvalidParameters', message, { restCode: 'ValidationFailed', errors: errs });
}

function missing(field: string): FieldError {
  return { field, code: 'MissingParameter', message: `"${field}" is missing` };
}

function invalid(field: string, message: string): FieldError {
  return { field, code: 'Invalid', message };
}

/**
 * A new unactivated image from `data`. `uuid` is the image's uuid (the given one for an
 * import, a fresh one for CreateImage); `isImport` keeps `published_at` and `urn` as given.
 */
export function newImage(given: Record<string, unknown>, uuid: string, isImport: boolean): ImageManifest {
  // Image.create upgrades an older manifest first (a v1 `.dsmanifest` of DSAPI days), with
  // imgmanifest's own rules; what cannot be upgraded is left for the checks below.
  let data = given;
  try {
    data = imgmanifest.upgradeManifest(structuredClone(given));
  } catch {
    // not upgradable: validated as it is
  }
  const zvolOnly = ['nic_driver', 'disk_driver', 'cpu_type', 'image_size'];
  const importOnly = ['uuid', 'published_at', 'urn'];
  const extra = Object.keys(data).filter(
    (k) =>
      !KNOWN_FIELDS.has(k) ||
      (!isImport && importOnly.includes(k)) ||
      (data.type !== 'zvol' && zvolOnly.includes(k)),
  );
  if (extra.length > 0) {
    throw invalidParameter(
      `invalid extra parameters: "${extra.join('", "')}"`,
      extra.map((f) => invalid(f, 'unknown field')),
    );
  }
  if (isImport && data.published_at !== undefined && typeof data.published_at !== 'string') {
    throw invalidParameter('invalid "published_at"', [invalid('published_at', 'must be a string')]);
  }

  const errs: FieldError[] = [];
  const str = (field: string, max: number): string | undefined => {
    const v = data[field];
    if (v === undefined) {
      errs.push(missing(field));
      return undefined;
    }
    if (typeof v !== 'string' || v.length === 0 || v.length > max) {
      errs.push(invalid(field, `invalid image ${field}: must be a string of 1 to ${max} characters`));
      return undefined;
    }
    return v;
  };
  const owner = data.owner;
  if (owner === undefined) errs.push(missing('owner'));
  else if (!isUuid(owner)) errs.push(invalid('owner', 'owner must be a UUID'));
  const name = str('name', 512);
  const version = str('version', 128);
  const type = data.type;
  if (type === undefined) errs.push(missing('type'));
  else if (typeof type !== 'string' || !TYPES.includes(type)) {
    errs.push(invalid('type', `invalid image type, "${String(type)}", must be one of: ${TYPES.join(', ')}`));
  }
  const os = data.os;
  if (os === undefined) errs.push(missing('os'));
  else if (typeof os !== 'string' || !OSES.includes(os)) {
    errs.push(invalid('os', `invalid image os, "${String(os)}", must be one of: ${OSES.join(', ')}`));
  }
  if (data.v !== undefined && data.v !== 2) errs.push(invalid('v', 'only manifest version 2 is supported'));
  if (data.origin !== undefined && !isUuid(data.origin)) errs.push(invalid('origin', 'origin must be a UUID'));
  for (const flag of ['public', 'disabled', 'generate_passwords'] as const) {
    if (data[flag] !== undefined && typeof data[flag] !== 'boolean') errs.push(invalid(flag, `${flag} must be a boolean`));
  }
  for (const obj of ['requirements', 'tags', 'traits'] as const) {
    const v = data[obj];
    if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) errs.push(invalid(obj, `${obj} must be an object`));
  }
  if (data.image_size !== undefined && !Number.isFinite(Number(data.image_size))) errs.push(invalid('image_size', 'image_size must be a number'));
  if (errs.length > 0) {
    throw validationFailed(`invalid image data: ${errs.map((e) => e.field).join(', ')}`, errs);
  }

  const m: ImageManifest = {
    v: 2,
    uuid,
    owner: String(owner).toLowerCase(),
    name: name!,
    version: version!,
    state: 'unactivated',
    disabled: data.disabled === true,
    public: data.public === true,
    type: type as string,
    os: os as string,
    files: [],
  };
  const copy = <K extends keyof ImageManifest>(k: K): void => {
    if (data[k] !== undefined) (m as unknown as Record<string, unknown>)[k] = data[k];
  };
  for (const k of ['description', 'homepage', 'eula', 'origin', 'requirements', 'users', 'billing_tags', 'traits', 'tags', 'generate_passwords', 'inherited_directories', 'acl'] as const) {
    copy(k);
  }
  if (m.origin) m.origin = m.origin.toLowerCase();
  // Image.create keeps the zvol-only fields for zvols only.
  if (m.type === 'zvol') {
    for (const k of ['nic_driver', 'disk_driver', 'cpu_type'] as const) copy(k);
    if (data.image_size !== undefined) m.image_size = Number(data.image_size);
  }
  if (isImport) {
    if (typeof data.published_at === 'string') m.published_at = data.published_at;
    if (typeof data.urn === 'string') m.urn = data.urn;
  }
  return m;
}
