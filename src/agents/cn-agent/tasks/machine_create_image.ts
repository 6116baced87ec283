/**
 * machine_create_image: IMGAPI's create-from-vm workflow sends it (through CNAPI's
 * `POST /servers/:s/vms/:uuid/images`) to make an image of a VM and publish it to the IMGAPI
 * at `imgapi_url`. The real task (sdc-cn-agent lib/backends/smartos/tasks/
 * machine_create_image.js, imgadm.js `createImage`) runs `imgadm -E create ... --publish`,
 * answers `{}` after progress 100, and fails with the JSON of imgadm's error.
 *
 * What a CN does to the VM meanwhile: without a prepare-image script the VM must be stopped
 * (VmNotStopped otherwise); with one, imgadm stops a running VM, boots it to run the
 * script, snapshots, rolls the VM back and starts it again, so the VM ends as it began.
 * Here the script does not run (there is no guest); the stop and the start do. On a timing
 * profile the upload takes `tasks.machine_create_image.send` over the image file's bytes.
 */
import { messageOf } from '../../../common/errors.js';
import { defineTask, TaskError, type TaskParams } from '../types.js';
import { buildImageFile, buildManifest, IMGADM_COMPRESSIONS, ImgadmError, publishImage } from '../images/imgadm-create.js';
import { childCrash } from '../task-support/child-crash.js';
import { flagParam, invalid, isPlainObject, optNumberParam, optStringParam } from '../task-support/params.js';
import { restCodeOf } from '../vmadm-bridge/vm-common.js';
import { isUuid } from '../../../common/uuid.js';

interface CreateImageParams {
  uuid: string;
  compression: string;
  imgapiUrl: string;
  manifest: Record<string, unknown>;
  incremental: boolean;
  prepareImageScript: string | undefined;
  maxOriginDepth: number | undefined;
}

/** The real task asserts these (`assert.ok`): a missing one kills its child process. */
function validate(p: TaskParams): CreateImageParams {
  const crash = () => invalid(childCrash('machine_create_image'));
  if (!p.uuid || !p.compression || !p.imgapi_url || !isPlainObject(p.manifest) || !p.manifest.uuid) throw crash();
  if (!isUuid(p.uuid)) throw invalid(`params.uuid must be a UUID (got ${JSON.stringify(p.uuid).slice(0, 80)})`);
  return {
    uuid: p.uuid.toLowerCase(),
    compression: String(p.compression),
    imgapiUrl: String(p.imgapi_url),
    manifest: { ...p.manifest },
    incremental: flagParam(p, 'incremental'),
    prepareImageScript: optStringParam(p, 'prepare_image_script'),
    maxOriginDepth: optNumberParam(p, 'max_origin_depth'),
  };
}

/** The task's failure: imgadm's structured error as JSON, anything else as text (clipped). */
function failure(err: unknown): TaskError {
  if (err instanceof ImgadmError) return new TaskError(JSON.stringify(err.toJSON()));
  const restCode = restCodeOf(err);
  return new TaskError(messageOf(err).slice(0, 20_000), restCode ? { restCode } : undefined);
}

export const machineCreateImage = defineTask<CreateImageParams>({
  name: 'machine_create_image',
  queue: 'machine_images',
  changesVms: true,
  validate,
  vmLocks: (p) => [p.uuid],
  async run(ctx, p) {
    const vms = ctx.cn.vms;
    try {
      if (!(IMGADM_COMPRESSIONS as readonly string[]).includes(p.compression)) {
        throw new ImgadmError(
          'Usage',
          `invalid -c,--compression "${p.compression}": must be one of "${IMGADM_COMPRESSIONS.join('", "')}"`,
          'UsageError',
        );
      }
      if (p.maxOriginDepth !== undefined && p.maxOriginDepth < 2) {
        throw new ImgadmError('Usage', `invalid --max-origin-depth "${p.maxOriginDepth}": must be greater than 1`, 'UsageError');
      }
      // `vmadm get`: finds DNI VMs too.
      const vm = vms.get(p.uuid, { include_dni: true });
      if (!vm) throw new ImgadmError('VmNotFound', `vm "${p.uuid}" was not found`);
      if (!p.prepareImageScript && vm.state !== 'stopped') {
        throw new ImgadmError('VmNotStopped', `vm "${p.uuid}" is not stopped`);
      }
      const manifest = await buildManifest(ctx, {
        vm,
        manifest: p.manifest,
        compression: p.compression,
        incremental: p.incremental,
        imgapiUrl: p.imgapiUrl,
      });

      const restart = p.prepareImageScript !== undefined && vm.state === 'running';
      if (restart) {
        ctx.log.info('Stopping VM %s to snapshot it', p.uuid);
        await vms.stop(p.uuid);
      }
      let file;
      try {
        file = await buildImageFile(vm, manifest, p.compression, p.incremental);
      } finally {
        if (restart) {
          ctx.log.info('Restarting VM %s (cleanup)', p.uuid);
          await vms.start(p.uuid).catch((err: unknown) => ctx.log.warn({ err }, 'could not restart VM %s', p.uuid));
        }
      }
      manifest.files = [{ size: file.size, compression: p.compression, sha1: file.sha1 }];
      // The snapshot sent, compressed and uploaded takes its time over the file's bytes.
      await ctx.phase('send', file.size);
      await publishImage(ctx, p.imgapiUrl, manifest, file, p.compression);
      ctx.log.info('Success creating and publishing image %s from VM %s', manifest.uuid, p.uuid);
    } catch (err) {
      ctx.log.warn({ err }, 'Error creating and publishing image from VM %s', p.uuid);
      throw failure(err);
    }
    ctx.progress(100);
    return {};
  },
});
