/**
 * image_ensure_present: import an image (images/installed.ts says what that means here). The
 * import takes the time the timing profile gives it for the image file's bytes.
 */
import { defineTask, TaskError } from '../types.js';
import { fetchManifest, imageFileBytes, isImageInstalled, markImageInstalled } from '../images/installed.js';
import { optStringParam, uuidParam } from '../task-support/params.js';

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
      await ctx.phase('import');
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
    await ctx.phase('import', imageFileBytes(manifest));
    markImageInstalled(ctx, p.imageUuid, manifest);
    ctx.log.info('Imported image %s to zpool %s', p.imageUuid, p.zpool);
    return {};
  },
});
