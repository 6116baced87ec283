/**
 * zfs_rename_dataset: `zfs rename <dataset> <newname>` (children and snapshots move with it;
 * a snapshot may be renamed within its dataset, `newname` as a full or short name).
 * CNAPI has no route for it.
 */
import { defineTask } from '../types.js';
import { argParam, zfsWrite } from '../zfs/cn-zfs.js';
import { zfsRename } from '../zfs/ops.js';

export const zfsRenameDataset = defineTask<{ dataset: string; newname: string }>({
  name: 'zfs_rename_dataset',
  queue: 'zfs_tasks',
  locks: ['zfs'],
  validate: (p) => ({ dataset: argParam(p, 'dataset'), newname: argParam(p, 'newname') }),
  async run(ctx, p) {
    await zfsWrite(ctx, `failed to rename ZFS dataset "${p.dataset}" to "${p.newname}"`, (view, next) =>
      zfsRename(view, next, p.dataset, p.newname),
    );
    return {};
  },
});
