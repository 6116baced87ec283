/**
 * zfs_clone_dataset: `zfs clone <snapshot> <dataset>`. CNAPI has no route for it.
 */
import { defineTask } from '../types.js';
import { argParam, zfsWrite } from '../zfs/cn-zfs.js';
import { zfsClone } from '../zfs/ops.js';

export const zfsCloneDataset = defineTask<{ snapshot: string; dataset: string }>({
  name: 'zfs_clone_dataset',
  queue: 'zfs_tasks',
  locks: ['zfs'],
  validate: (p) => ({ snapshot: argParam(p, 'snapshot'), dataset: argParam(p, 'dataset') }),
  async run(ctx, p) {
    await zfsWrite(ctx, `failed to clone ZFS snapshot "${p.snapshot}" into dataset "${p.dataset}"`, (view, next) =>
      zfsClone(view, next, p.snapshot, p.dataset),
    );
    return {};
  },
});
