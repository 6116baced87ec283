/**
 * What the zfs query tasks share: the `dataset` param and the CN's ZFS view (zfs-model.ts)
 * with the images it has installed.
 */
import { TaskError, type TaskContext } from '../types.js';
import { imagesInUse } from './installed-images.js';
import { invalid, optStringParam } from './params.js';
import { zfsView, type ZfsView } from './zfs-model.js';

const DATASET_RE = /^[A-Za-z0-9_.:%/@-]{1,256}$/;

export function datasetParam(p: Record<string, unknown>): string {
  const ds = optStringParam(p, 'dataset') ?? '';
  if (ds !== '' && (!DATASET_RE.test(ds) || ds.includes('..') || ds.startsWith('/'))) {
    throw invalid(`params.dataset is not a ZFS dataset name: ${JSON.stringify(ds).slice(0, 80)}`);
  }
  return ds;
}

export function viewOf(ctx: TaskContext): ZfsView {
  const images = new Map<string, { uuid: string; size?: number }>();
  for (const uuid of imagesInUse(ctx)) images.set(uuid, { uuid });
  for (const img of ctx.state.images.values()) {
    const file0 = Array.isArray(img.manifest.files) ? (img.manifest.files[0] as { size?: unknown } | undefined) : undefined;
    images.set(img.uuid, typeof file0?.size === 'number' ? { uuid: img.uuid, size: file0.size } : { uuid: img.uuid });
  }
  return zfsView(ctx.cn, [...images.values()].sort((a, b) => a.uuid.localeCompare(b.uuid)));
}

export function notFound(what: string, ds: string): TaskError {
  return new TaskError(`${what}: cannot open '${ds}': dataset does not exist`);
}
