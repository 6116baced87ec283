/**
 * zfs_set_properties: one `zfs set <key>=<value> <dataset>` per entry of `properties`, as
 * node-zfs runs them: last key first, stopping at the first refusal (the ones set before it
 * stay set). For CNAPI's (deprecated) `POST /servers/:uuid/datasets/:dataset/properties`.
 */
import { defineTask } from '../types.js';
import { invalid } from '../task-support/params.js';
import { argParam, zfsWrite } from '../zfs/cn-zfs.js';
import { zfsSet } from '../zfs/ops.js';

interface SetParams {
  dataset: string;
  /** [key, value] in the order node-zfs sets them. */
  assignments: [string, string][];
}

export const zfsSetProperties = defineTask<SetParams>({
  name: 'zfs_set_properties',
  queue: 'zfs_tasks',
  locks: ['zfs'],
  validate: (p) => {
    const props = p.properties;
    // node-zfs calls Object.keys(properties): nothing there kills the real task's process.
    if (props === undefined || props === null) {
      throw invalid('Child task process zfs_set_properties did not terminate cleanly. (1)');
    }
    const obj = Object(props) as Record<string, unknown>;
    const assignments = Object.keys(obj)
      .reverse()
      .map((k): [string, string] => [k, String(obj[k])]);
    return { dataset: argParam(p, 'dataset'), assignments };
  },
  async run(ctx, p) {
    for (const [key, value] of p.assignments) {
      await zfsWrite(ctx, `failed to set ZFS properties for dataset "${p.dataset}"`, (view, next) =>
        zfsSet(view, next, p.dataset, key, value),
      );
    }
    return {};
  },
});
