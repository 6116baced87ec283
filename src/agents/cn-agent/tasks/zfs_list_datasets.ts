/**
 * zfs_list_datasets: `zfs list -t all` of the CN (its ZFS view, zfs/model.ts), one object per
 * dataset in node-zfs's fields, for CNAPI's (deprecated) `GET /servers/:uuid/datasets`.
 */
import { defineTask } from '../types.js';
import { viewOf } from '../zfs/cn-zfs.js';
import { nicenum } from '../zfs/model.js';

export const zfsListDatasets = defineTask<Record<string, never>>({
  name: 'zfs_list_datasets',
  queue: 'zfs_query',
  validate: () => ({}),
  async run(ctx) {
    const rows = (await viewOf(ctx)).datasets.map((d) => ({
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
