/**
 * zfs_list_pools: one of the zfs query tasks CNAPI's (deprecated) ZFS endpoints send, answered from the
 * CN's ZFS view (zfs-model.ts) in node-zfs's result shapes.
 */
import { defineTask } from '../types.js';
import { viewOf } from './zfs-common.js';
import { nicenum } from './zfs-model.js';

export const zfsListPools = defineTask<Record<string, never>>({
  name: 'zfs_list_pools',
  queue: 'zfs_query',
  validate: () => ({}),
  async run(ctx) {
    const { pool } = viewOf(ctx);
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
