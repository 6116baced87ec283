/**
 * zfs_get_properties: one of the zfs query tasks CNAPI's (deprecated) ZFS endpoints send, answered from the
 * CN's ZFS view (zfs-model.ts) in node-zfs's result shapes.
 */
import { defineTask, TaskError } from '../types.js';
import { invalid, optArrayParam } from './params.js';
import { datasetParam, notFound, viewOf } from './zfs-common.js';
import { KNOWN_PROPERTIES, datasetProperties } from './zfs-model.js';

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
