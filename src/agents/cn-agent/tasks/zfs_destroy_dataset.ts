/**
 * zfs_destroy_dataset: `zfs destroy <dataset>` (no -r: a dataset with children or snapshots,
 * or a snapshot with clones, is refused), for CNAPI's (deprecated)
 * `DELETE /servers/:uuid/datasets/:dataset`.
 */
import { defineTask } from '../types.js';
import { argParam, zfsWrite } from '../zfs/cn-zfs.js';
import { zfsDestroy } from '../zfs/ops.js';

export const zfsDestroyDataset = defineTask<{ dataset: string }>({
  name: 'zfs_destroy_dataset',
  queue: 'zfs_tasks',
  locks: ['zfs'],
  validate: (p) => ({ dataset: argParam(p, 'dataset') }),
  async run(ctx, p) {
    await zfsWrite(ctx, `failed to destroy ZFS dataset "${p.dataset}"`, (view, next) => zfsDestroy(view, next, p.dataset));
    return {};
  },
});
