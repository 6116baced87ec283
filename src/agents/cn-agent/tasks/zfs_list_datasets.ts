/**
 * zfs_list_datasets: one of the zfs query tasks CNAPI's (deprecated) ZFS endpoints send, answered from the
 * CN's ZFS view (zfs-model.ts) in node-zfs's result shapes.
 */
import { defineTask } from '../types.js';
import { viewOf } from './zfs-common.js';
import { nicenum } from './zfs-model.js';

export const zfsListDatasets = defineTask<Record<string, never>>({
  name: 'zfs_list_datasets',
  queue: 'zfs_query',
  validate: () => ({}),
  async run(ctx) {
    const rows = viewOf(ctx).datasets.map((d) => ({
      name: d.name,
      used: nicenum(d.used),
      avail: d.type === 'snapshot' ? '-' : nicenum(d.avail),
      refer: nicenum(d.refer),
      type: d.type,
      mountpoint: d.mountpoint,
    }));
    ctx.progress(100);
    return rows;
  },
});
