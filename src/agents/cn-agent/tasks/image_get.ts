/**
 * image_get: the manifest of an installed image (images/installed.ts), as imgadm get prints it.
 */
import { imageNotInstalled } from '../gz-commands/imgadm.js';
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
      // sdc-cn-agent lib/backends/smartos/imgadm.js getImage: the failed `imgadm get`, its
      // command line and its stderr.
      const argv = ['/usr/sbin/imgadm', 'get', p.uuid];
      throw new TaskError(
        `Image.get error: error getting image ${p.uuid}:\n    cmd: ${argv.join(' ')}\n    stderr: ${imageNotInstalled(p.uuid, 'zones')}`,
      );
    }
    ctx.progress(100);
    return { ...image.manifest };
  },
});
