/**
 * zfs_list_snapshots: `zfs list -t snapshot -r [<dataset>]` of the CN (its ZFS view,
 * zfs/model.ts), for CNAPI's (deprecated) `GET /servers/:uuid/datasets/:dataset/snapshots`.
 */
import { defineTask } from '../types.js';
import { datasetParam, queryFailure, viewOf } from '../zfs/cn-zfs.js';
import { nicenum } from '../zfs/model.js';
import { isAtOrBelow, ZfsCommandError } from '../zfs/names.js';

const LIST_ARGS = ['list', '-H', '-o', 'name,used,avail,refer,type,mountpoint', '-t', 'snapshot'];

export const zfsListSnapshots = defineTask<{ dataset: string }>({
  name: 'zfs_list_snapshots',
  queue: 'zfs_query',
  validate: (p) => ({ dataset: datasetParam(p) }),
  async run(ctx, p) {
    const { datasets, byName } = await viewOf(ctx);
    if (p.dataset !== '' && !byName.has(p.dataset)) {
      const err = new ZfsCommandError([...LIST_ARGS, '-r', p.dataset], `cannot open '${p.dataset}': dataset does not exist\n`);
      throw queryFailure('failed to list ZFS datasets', err, true);
    }
    const rows = datasets
      .filter((d) => d.type === 'snapshot' && (p.dataset === '' || isAtOrBelow(d.name, p.dataset)))
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
