/**
 * The zfs query tasks CNAPI's (deprecated) ZFS endpoints send: zfs_list_pools,
 * zfs_list_datasets, zfs_list_snapshots and zfs_get_properties, answered from the CN's
 * ZFS view (zfs-model.ts) in node-zfs's result shapes: rows as objects of the `zfs list` /
 * `zpool list` columns (human-readable numbers), and `{<dataset>: {<property>: value}}`
 * for `zfs get -p`.
 */
import { defineTask, TaskError, type TaskContext } from '../types.js';
import { imagesInUse } from './images.js';
import { invalid, optArrayParam, optStringParam } from './params.js';
import { KNOWN_PROPERTIES, datasetProperties, nicenum, zfsView, type ZfsView } from './zfs-model.js';

const DATASET_RE = /^[A-Za-z0-9_.:%/@-]{1,256}$/;

function datasetParam(p: Record<string, unknown>): string {
  const ds = optStringParam(p, 'dataset') ?? '';
  if (ds !== '' && (!DATASET_RE.test(ds) || ds.includes('..') || ds.startsWith('/'))) {
    throw invalid(`params.dataset is not a ZFS dataset name: ${JSON.stringify(ds).slice(0, 80)}`);
  }
  return ds;
}

function viewOf(ctx: TaskContext): ZfsView {
  const images = new Map<string, { uuid: string; size?: number }>();
  for (const uuid of imagesInUse(ctx)) images.set(uuid, { uuid });
  for (const img of ctx.state.images.values()) {
    const file0 = Array.isArray(img.manifest.files) ? (img.manifest.files[0] as { size?: unknown } | undefined) : undefined;
    images.set(img.uuid, typeof file0?.size === 'number' ? { uuid: img.uuid, size: file0.size } : { uuid: img.uuid });
  }
  return zfsView(ctx.cn, [...images.values()].sort((a, b) => a.uuid.localeCompare(b.uuid)));
}

function notFound(what: string, ds: string): TaskError {
  return new TaskError(`${what}: cannot open '${ds}': dataset does not exist`);
}

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

export const zfsGetProperties = defineTask<{ dataset: string; properties: string[] }>({
  name: 'zfs_get_properties',
  queue: 'zfs_query',
  validate: (p) => {
    const props = optArrayParam(p, 'properties') ?? ['all'];
    if (!props.every((x) => typeof x === 'string' && /^[a-z_:.]{1,64}$/.test(x))) {
      throw invalid('params.properties must be an array of ZFS property names');
    }
    return { dataset: datasetParam(p), properties: props as string[] };
  },
  async run(ctx, p) {
    const what = `failed to get ZFS properties for dataset "${p.dataset}"`;
    const unknown = p.properties.find((x) => x !== 'all' && !KNOWN_PROPERTIES.includes(x));
    if (unknown !== undefined) throw new TaskError(`${what}: bad property list: invalid property '${unknown}'`);
    const { datasets } = viewOf(ctx);
    const chosen = p.dataset === '' ? datasets : datasets.filter((d) => d.name === p.dataset);
    if (p.dataset !== '' && chosen.length === 0) throw notFound(what, p.dataset);
    const out: Record<string, Record<string, string>> = {};
    for (const d of chosen) {
      const all = datasetProperties(d);
      const props: Record<string, string> = {};
      for (const name of p.properties.includes('all') ? KNOWN_PROPERTIES : p.properties) props[name] = all[name]!;
      out[d.name] = props;
    }
    return out;
  },
});
