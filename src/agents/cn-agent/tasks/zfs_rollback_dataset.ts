/**
 * zfs_rollback_dataset: `zfs rollback -r <snapshot>` as node-zfs runs it: the snapshots taken
 * after it are destroyed, unless one of them has clones. For CNAPI's (deprecated)
 * `POST /servers/:uuid/datasets/:dataset/rollback`.
 */
import { defineTask } from '../types.js';
import { argParam, zfsWrite } from '../zfs/cn-zfs.js';
import { zfsRollback } from '../zfs/ops.js';

export const zfsRollbackDataset = defineTask<{ dataset: string }>({
  name: 'zfs_rollback_dataset',
  queue: 'zfs_tasks',
  locks: ['zfs'],
  validate: (p) => ({ dataset: argParam(p, 'dataset') }),
  async run(ctx, p) {
    await zfsWrite(ctx, `failed to rollback ZFS dataset "${p.dataset}"`, (view, next) => zfsRollback(view, next, p.dataset));
    return {};
  },
});
