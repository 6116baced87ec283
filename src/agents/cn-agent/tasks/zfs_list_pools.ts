/**
 * zfs_list_pools: `zpool list` of the CN (its ZFS view, zfs/model.ts, so the space the ZFS
 * write tasks added counts), for CNAPI's (deprecated) `GET /servers/:uuid/zpools`.
 */
import { defineTask } from '../types.js';
import { viewOf } from '../zfs/cn-zfs.js';
import { nicenum } from '../zfs/model.js';

export const zfsListPools = defineTask<Record<string, never>>({
  name: 'zfs_list_pools',
  queue: 'zfs_query',
  validate: () => ({}),
  async run(ctx) {
    const { pool } = await viewOf(ctx);
    const cap = pool.size > 0 ? Math.round((pool.allocated / pool.size) * 100) : 0;
    ctx.progress(100);
    return [
      {
        name: pool.name,
        size: nicenum(pool.size),
        allocated: nicenum(pool.allocated),
        free: nicenum(pool.free),
        cap: `${cap}%`,
        health: pool.health,
        altroot: '-',
      },
    ];
  },
});
