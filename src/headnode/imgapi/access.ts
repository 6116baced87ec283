/**
 * Who may see and change an image, as sdc-imgapi lib/images.js decides it for a request:
 * `reqValidUuid` (a malformed uuid is a 404 of the URL), `reqGetImage` (with `?account=` the
 * account sees its own images, and others' only once activated and public or shared with it
 * through `acl`: else 404), `reqEnsureAccountIsImageOwner` (writes with `?account=` only by
 * the owner), `reqInclAdminFields`, and restify's `conditionalRequest` on the image's etag.
 */
import { createHash } from 'node:crypto';
import { MockcloudError } from '../../common/errors.js';
import { query, type Reply, type Req } from '../http.js';
import { fieldErr, imgapiErrors } from './errors.js';
import { serializeImage, type ImageManifest } from './images.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isImgapiUuid(v: unknown): v is string {
  return typeof v === 'string' && UUID_RE.test(v);
}

/** `reqValidUuid`. */
export function validUuid(req: Req): string {
  const uuid = String(req.params.uuid);
  if (!isImgapiUuid(uuid)) throw imgapiErrors.notFound(`${req.url} does not exist`);
  return uuid;
}

/** `?account=`, checked to be a uuid; undefined when absent. */
export function requestAccount(req: Req): string | undefined {
  const account = query(req).account;
  if (account === undefined || account === '') return undefined;
  if (!isImgapiUuid(account)) throw imgapiErrors.invalidAccount(String(account));
  return account;
}

export function isActivated(m: ImageManifest): boolean {
  return m.state === 'active' || m.state === 'disabled';
}

/** `Image._calcState`: the state an image has for being activated (or not) and disabled (or not). */
export function calcState(activated: boolean, disabled: boolean): 'unactivated' | 'disabled' | 'active' {
  if (!activated) return 'unactivated';
  return disabled ? 'disabled' : 'active';
}

/** Whether `account` may see `m` (reqGetImage's rules). */
export function visibleTo(m: ImageManifest, account: string): boolean {
  if (m.owner === account) return true;
  if (!isActivated(m)) return false;
  return m.public || (m.acl ?? []).includes(account);
}

/** `reqValidUuid` + `reqGetImage`. */
export function imageForRequest(images: ReadonlyMap<string, ImageManifest>, req: Req): ImageManifest {
  const uuid = validUuid(req);
  const account = requestAccount(req);
  const m = images.get(uuid);
  if (!m) throw imgapiErrors.notFound(`image ${uuid} not found`);
  if (account !== undefined && !visibleTo(m, account)) throw imgapiErrors.notFound('image not found');
  return m;
}

/** `reqEnsureAccountIsImageOwner`. */
export function ensureOwner(req: Req, m: ImageManifest): void {
  const account = requestAccount(req);
  if (account !== undefined && account !== m.owner) throw imgapiErrors.notImageOwner(account, m.uuid);
}

/** `utils.boolFromString` for a query param. */
export function boolParam(req: Req, field: string, fallback: boolean): boolean {
  const v = query(req)[field];
  if (v === undefined) return fallback;
  if (v === 'true' || v === true) return true;
  if (v === 'false' || v === false) return false;
  throw imgapiErrors.invalidParameter(`invalid value for "${field}" param: ${JSON.stringify(v)} is not a boolean`, [fieldErr(field, 'Invalid')]);
}

/** The image's etag: sha1 of its serialized form (reqGetImage's `res.etag`). */
export function imageEtag(m: ImageManifest): string {
  return createHash('sha1').update(JSON.stringify(serializeImage(m)), 'utf8').digest('hex');
}

/** restify conditionalRequest's If-Match (writes), as restify 4 answers a mismatch. */
export function checkIfMatch(req: Req, etag: string): void {
  const h = req.headers['if-match'];
  if (!h) return;
  const tags = h.split(/\s*,\s*/).map((t) => t.replace(/^W\//, '').replace(/^"(\w*)"$/, '$1'));
  if (!tags.some((t) => t === '*' || t === etag)) {
    throw new MockcloudError('PreconditionFailed', `if-match '${h}' didn't match etag '${etag}'`, { restCode: 'PreconditionFailedError' });
  }
}

/** restify conditionalRequest's If-None-Match for GET/HEAD. */
export function notModified(req: Req, etag: string): Reply | undefined {
  const h = req.headers['if-none-match'];
  if (!h) return undefined;
  const tags = h.split(/\s*,\s*/).map((t) => t.replace(/^W\//, '').replace(/^"(\w*)"$/, '$1'));
  return tags.some((t) => t === '*' || t === etag) ? { status: 304, headers: { Etag: etag } } : undefined;
}
