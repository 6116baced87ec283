/**
 * zfs_snapshot_dataset: `zfs snapshot <dataset>@<name>` (`dataset` carries the whole snapshot
 * name), for CNAPI's (deprecated) `POST /servers/:uuid/datasets/:dataset/snapshot`.
 */
import { defineTask } from '../types.js';
import { argParam, zfsWrite } from '../zfs/cn-zfs.js';
import { zfsSnapshot } from '../zfs/ops.js';

export const zfsSnapshotDataset = defineTask<{ dataset: string }>({
  name: 'zfs_snapshot_dataset',
  queue: 'zfs_tasks',
  locks: ['zfs'],
  validate: (p) => ({ dataset: argParam(p, 'dataset') }),
  async run(ctx, p) {
    await zfsWrite(ctx, `failed to snapshot ZFS dataset "${p.dataset}"`, (view, next) => zfsSnapshot(view, next, p.dataset));
    return {};
  },
});
