/**
 * image_get: the manifest of an installed image (images/installed.ts), as imgadm get prints it.
 */
import { defineTask, TaskError, type InstalledImage } from '../types.js';
import { fetchManifest, imagesInUse, markImageInstalled } from '../images/installed.js';
import { uuidParam } from '../task-support/params.js';

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
