/**
 * CloneImage `POST /images/:uuid/clone?account=UUID` (sdc-imgapi lib/images.js apiCloneImage,
 * a 'dc'-mode endpoint): an account copies an image shared with it (on its `acl`) into an
 * image of its own. The origin chain up to the first image of the admin (or the unset owner)
 * is copied with it, base first, every copy but the last disabled; each copy has a new uuid,
 * no acl, the account as owner and its file copied, and is activated. A failure removes the
 * copies made so far (what it cannot remove is logged) and answers the failure.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { fsyncDir } from '../../common/durable-file.js';
import { failureFields, type Logger } from '../../common/log.js';
import type { Reply, Req } from '../http.js';
import { ok } from '../http.js';
import { calcState, isActivated, isImgapiUuid } from './access.js';
import { fieldErr, imgapiError, imgapiErrors } from './errors.js';
import { serializeImage, UNSET_OWNER_UUID, type ImageManifest } from './images.js';
import type { ImageCatalogue } from './writes.js';

/** IMGAPI's MAX_ORIGIN_DEPTH. */
const MAX_ORIGIN_DEPTH = 100;

export async function cloneImage(cat: ImageCatalogue, image: ImageManifest, req: Req, newUuid: () => string, log: Logger): Promise<Reply> {
  const account = (req.query as Record<string, unknown> | undefined)?.account;
  if (!isImgapiUuid(account)) {
    throw imgapiErrors.invalidParameter(`invalid "account": not a UUID: "${String(account)}"`, [fieldErr('account', 'Invalid')]);
  }
  if (!isActivated(image)) throw imgapiErrors.validationFailed('image is not active', [fieldErr('active', 'Invalid')]);
  if (!(image.acl ?? []).includes(account)) throw imgapiErrors.imageNotShared(account, image.uuid);
  if (image.type === 'docker') throw imgapiErrors.validationFailed('docker images cannot be cloned', [fieldErr('type', 'Invalid')]);
  if (image.files.length > 1) throw imgapiError('NotImplemented', 'cannot clone images with multiple files');

  // The images to copy, base first, and the admin image the copies will sit on.
  const toClone: ImageManifest[] = [image];
  let base: ImageManifest | undefined;
  for (let origin = image.origin; origin !== undefined; ) {
    const img = cat.get(origin);
    if (!img) throw imgapiErrors.notFound(`image ${origin} not found`);
    if (img.owner === UNSET_OWNER_UUID || img.owner === cat.adminUuid) {
      base = img;
      break;
    }
    toClone.unshift(img);
    if (toClone.length >= MAX_ORIGIN_DEPTH) throw imgapiError('InternalError', `Origin chain too long, exceeds ${MAX_ORIGIN_DEPTH} images`);
    origin = img.origin;
  }

  const made: ImageManifest[] = [];
  try {
    for (const img of toClone) {
      const uuid = newUuid();
      const disabled = img !== image ? true : img.disabled;
      const copy: ImageManifest = {
        ...structuredClone(img),
        uuid,
        owner: account,
        state: calcState(true, disabled),
        disabled,
        published_at: new Date().toISOString(),
      };
      delete copy.acl;
      delete copy.icon;
      if (base) copy.origin = base.uuid;
      else delete copy.origin;
      if (img.files.length > 0) {
        const to = cat.fileOf(uuid);
        await fsp.mkdir(path.dirname(to), { recursive: true });
        await fsp.copyFile(cat.fileOf(img.uuid), to);
        await fsyncDir(path.dirname(to));
      }
      await cat.put(copy);
      made.push(copy);
      base = copy;
    }
  } catch (err) {
    for (const copy of made.reverse()) {
      const undo = (what: string) => (rollbackErr: unknown) => {
        log.warn({ ...failureFields(rollbackErr), image_uuid: copy.uuid, source_uuid: image.uuid }, `CloneImage rollback: could not remove the copy's ${what}`);
      };
      await cat.remove(copy.uuid).catch(undo('record'));
      await fsp.rm(path.dirname(cat.fileOf(copy.uuid)), { recursive: true, force: true }).catch(undo('file'));
    }
    throw err;
  }
  return ok(serializeImage(made[made.length - 1]!));
}
