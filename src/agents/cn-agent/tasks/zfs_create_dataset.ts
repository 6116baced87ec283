/**
 * zfs_create_dataset: `zfs create <dataset>` (a filesystem), for CNAPI's (deprecated)
 * `POST /servers/:uuid/datasets`. Finishes with nothing; a refusal reads
 * `failed to create ZFS dataset "<dataset>": Command failed: /sbin/zfs create ...`.
 */
import { defineTask } from '../types.js';
import { argParam, zfsWrite } from '../zfs/cn-zfs.js';
import { zfsCreate } from '../zfs/ops.js';

export const zfsCreateDataset = defineTask<{ dataset: string }>({
  name: 'zfs_create_dataset',
  queue: 'zfs_tasks',
  locks: ['zfs'],
  validate: (p) => ({ dataset: argParam(p, 'dataset') }),
  async run(ctx, p) {
    await zfsWrite(ctx, `failed to create ZFS dataset "${p.dataset}"`, (view, next) => zfsCreate(view, next, p.dataset));
    return {};
  },
});
