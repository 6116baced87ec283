/**
 * Images on a mock CN: image_ensure_present and image_get.
 *
 * A mock CN stores no image data. An image counts as installed once image_ensure_present
 * imported it (its manifest checked against IMGAPI when one is configured), once a VM was
 * created or reprovisioned from it, or while any VM on the CN uses it. Installed manifests
 * are kept in memory per CN; the VM-derived ones survive a restart because the VMs do.
 */
import { HttpStatusError } from '../../../common/http-client.js';
import { defineTask, TaskError, type InstalledImage, type TaskContext } from '../types.js';
import { optStringParam, uuidParam } from './params.js';

/** Record an image as imported (no manifest yet unless given). */
export function markImageInstalled(ctx: TaskContext, uuid: string, manifest?: Record<string, unknown>): void {
  const known = ctx.state.images.get(uuid);
  if (known && !manifest) return;
  ctx.state.images.set(uuid, { uuid, manifest: manifest ?? known?.manifest ?? { v: 2, uuid } });
}

/** The images the CN's VMs use (zone image_uuid and HVM disk images). */
export function imagesInUse(ctx: Pick<TaskContext, 'cn'>): Set<string> {
  const out = new Set<string>();
  for (const vm of ctx.cn.vms.list({ include_dni: true })) {
    if (typeof vm.image_uuid === 'string') out.add(vm.image_uuid.toLowerCase());
    for (const d of vm.disks ?? []) if (typeof d.image_uuid === 'string') out.add(d.image_uuid.toLowerCase());
  }
  return out;
}

export function isImageInstalled(ctx: TaskContext, uuid: string): boolean {
  return ctx.state.images.has(uuid) || imagesInUse(ctx).has(uuid);
}

/** GET <imgapi>/images/<uuid>; undefined when IMGAPI answers 404. */
export async function fetchManifest(ctx: TaskContext, uuid: string): Promise<Record<string, unknown> | undefined> {
  const base = ctx.env.imgapiUrl;
  if (!base) throw new Error('no IMGAPI URL is configured');
  const url = `${base.replace(/\/+$/, '')}/images/${uuid}`;
  try {
    const res = await ctx.env.http.call<Record<string, unknown>>({ method: 'GET', url, timeoutMs: 30_000 });
    if (typeof res.body !== 'object' || res.body === null || Array.isArray(res.body)) {
      throw new Error(`IMGAPI answered ${url} with something that is not a manifest`);
    }
    return res.body;
  } catch (err) {
    if (err instanceof HttpStatusError && err.statusCode === 404) return undefined;
    throw err;
  }
}

interface EnsureParams {
  imageUuid: string;
  zpool: string;
}

export const imageEnsurePresent = defineTask<EnsureParams>({
  name: 'image_ensure_present',
  queue: 'image_import_tasks',
  validate: (p) => ({
    imageUuid: uuidParam(p, 'image_uuid'),
    zpool: optStringParam(p, 'zfs_storage_pool_name') ?? 'zones',
  }),
  locks: ['images'],
  async run(ctx, p) {
    const dataset = `${p.zpool}/${p.imageUuid}`;
    ctx.log.info(`Checking whether zone template dataset ${dataset} exists on the system.`);
    if (isImageInstalled(ctx, p.imageUuid)) {
      ctx.log.info(`Image already installed (${dataset})`);
      return {};
    }
    if (!ctx.env.imgapiUrl) {
      ctx.log.warn('no IMGAPI URL configured: importing image %s without checking it', p.imageUuid);
      markImageInstalled(ctx, p.imageUuid);
      return {};
    }
    let manifest: Record<string, unknown> | undefined;
    try {
      manifest = await fetchManifest(ctx, p.imageUuid);
    } catch (err) {
      throw new TaskError(`error importing image ${p.imageUuid}: ${(err as Error).message}`);
    }
    if (!manifest || (manifest.state !== undefined && manifest.state !== 'active')) {
      throw new TaskError(`an active image "${p.imageUuid}" was not found in image sources`);
    }
    markImageInstalled(ctx, p.imageUuid, manifest);
    ctx.log.info('Imported image %s to zpool %s', p.imageUuid, p.zpool);
    return {};
  },
});

export const imageGet = defineTask<{ uuid: string }>({
  name: 'image_get',
  queue: 'image_query',
  validate: (p) => ({ uuid: uuidParam(p, 'uuid') }),
  async run(ctx, p) {
    let image: InstalledImage | undefined = ctx.state.images.get(p.uuid);
    if (!image && imagesInUse(ctx).has(p.uuid)) {
      let manifest: Record<string, unknown> | undefined;
      if (ctx.env.imgapiUrl) manifest = await fetchManifest(ctx, p.uuid).catch(() => undefined);
      markImageInstalled(ctx, p.uuid, manifest);
      image = ctx.state.images.get(p.uuid);
    }
    if (!image) {
      throw new TaskError(
        `Image.get error: error getting image ${p.uuid}: image "${p.uuid}" was not found on zpool "zones"`,
      );
    }
    ctx.progress(100);
    return { ...image.manifest };
  },
});
