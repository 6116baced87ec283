/**
 * zfs_list_snapshots: one of the zfs query tasks CNAPI's (deprecated) ZFS endpoints send, answered from the
 * CN's ZFS view (zfs-model.ts) in node-zfs's result shapes.
 */
import { defineTask } from '../types.js';
import { datasetParam, notFound, viewOf } from './zfs-common.js';
import { nicenum } from './zfs-model.js';

export const zfsListSnapshots = defineTask<{ dataset: string }>({
  name: 'zfs_list_snapshots',
  queue: 'zfs_query',
  validate: (p) => ({ dataset: datasetParam(p) }),
  async run(ctx, p) {
    const { datasets } = viewOf(ctx);
    if (p.dataset !== '' && !datasets.some((d) => d.name === p.dataset)) {
      throw notFound('failed to list ZFS datasets', p.dataset);
    }
    const under = (name: string) =>
      p.dataset === '' || name.startsWith(`${p.dataset}@`) || name.startsWith(`${p.dataset}/`);
    const rows = datasets
      .filter((d) => d.type === 'snapshot' && under(d.name))
      .map((d) => ({
        name: d.name,
        used: nicenum(d.used),
        avail: '-',
        refer: nicenum(d.refer),
        type: d.type,
        mountpoint: d.mountpoint,
      }));
    ctx.progress(100);
    return rows;
  },
});
