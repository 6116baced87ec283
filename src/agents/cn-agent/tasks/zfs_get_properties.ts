/**
 * zfs_get_properties: `zfs get -Hp -o name,property,value <props> [<dataset>]` of the CN (its
 * ZFS view, zfs/model.ts) as node-zfs parses it, `{<dataset>: {<property>: <value>}}`, for
 * CNAPI's (deprecated) `/dataset-properties` and `/datasets/:dataset/properties`. node-zfs
 * runs this one with spawn, so a failure reads as zfs's stderr alone.
 */
import { defineTask, TaskError } from '../types.js';
import { invalid, optArrayParam } from '../task-support/params.js';
import { datasetParam, queryFailure, viewOf } from '../zfs/cn-zfs.js';
import { datasetProperties } from '../zfs/model.js';
import { ZfsCommandError } from '../zfs/names.js';
import { KNOWN_PROPERTIES, isKnownProperty } from '../zfs/props.js';

export const zfsGetProperties = defineTask<{ dataset: string; properties: string[] }>({
  name: 'zfs_get_properties',
  queue: 'zfs_query',
  validate: (p) => {
    const props = optArrayParam(p, 'properties') ?? ['all'];
    if (!props.every((x) => typeof x === 'string' && /^[a-z0-9_:.-]{1,255}$/.test(x))) {
      throw invalid('params.properties must be an array of ZFS property names');
    }
    return { dataset: datasetParam(p), properties: props as string[] };
  },
  async run(ctx, p) {
    const what = `failed to get ZFS properties for dataset "${p.dataset}"`;
    const unknown = p.properties.find((x) => x !== 'all' && !isKnownProperty(x));
    if (unknown !== undefined) throw new TaskError(`${what}: bad property list: invalid property '${unknown}'`);
    const view = await viewOf(ctx);
    const target = p.dataset === '' ? undefined : view.byName.get(p.dataset);
    if (p.dataset !== '' && !target) {
      const args = ['get', '-Hp', '-o', 'name,property,value', p.properties.join(','), p.dataset];
      throw queryFailure(what, new ZfsCommandError(args, `cannot open '${p.dataset}': dataset does not exist\n`), false);
    }
    const all = p.properties.includes('all');
    const out: Record<string, Record<string, string>> = {};
    for (const d of target ? [target] : view.datasets) {
      const values = datasetProperties(view, d);
      const props: Record<string, string> = {};
      for (const name of all ? [...KNOWN_PROPERTIES, ...Object.keys(values).filter((k) => !KNOWN_PROPERTIES.includes(k))] : p.properties) {
        props[name] = values[name] ?? '-';
      }
      out[d.name] = props;
    }
    return out;
  },
});
