/**
 * What the zfs tasks share: the `dataset` param of the queries, the CN's ZFS state (loaded on
 * first use, state.ts), its ZFS view (model.ts) with the images it has installed, and
 * running a write the way node-zfs reports a failed command.
 */
import { TaskError, type CnTaskState, type TaskContext } from '../types.js';
import { imagesInUse } from '../images/installed.js';
import { invalid, optStringParam } from '../task-support/params.js';
import { ZfsCommandError } from './names.js';
import { zfsView, type ZfsView } from './model.js';
import { ZfsStore, zfsStateFile, type ZfsChanges } from './state.js';

const DATASET_RE = /^[A-Za-z0-9_.:%/@-]{1,256}$/;

export function datasetParam(p: Record<string, unknown>): string {
  const ds = optStringParam(p, 'dataset') ?? '';
  if (ds !== '' && (!DATASET_RE.test(ds) || ds.includes('..') || ds.startsWith('/'))) {
    throw invalid(`params.dataset is not a ZFS dataset name: ${JSON.stringify(ds).slice(0, 80)}`);
  }
  return ds;
}

/**
 * A param as node-zfs puts it on the zfs command line: the real tasks pass whatever came
 * (`undefined` included) to execFile, which turns it into a string.
 */
export function argParam(p: Record<string, unknown>, key: string): string {
  return String(p[key]);
}

/** Each CN's ZFS store, made on its first ZFS task and gone with its cn-agent slot. */
const stores = new WeakMap<CnTaskState, ZfsStore>();

function storeOf(ctx: TaskContext): ZfsStore {
  let store = stores.get(ctx.state);
  if (!store) {
    store = new ZfsStore(zfsStateFile(ctx.cn.paths.dir));
    stores.set(ctx.state, store);
  }
  return store;
}

function buildView(ctx: TaskContext, changes: ZfsChanges): ZfsView {
  const images = new Map<string, { uuid: string; size?: number }>();
  for (const uuid of imagesInUse(ctx)) images.set(uuid, { uuid });
  for (const img of ctx.state.images.values()) {
    const file0 = Array.isArray(img.manifest.files) ? (img.manifest.files[0] as { size?: unknown } | undefined) : undefined;
    images.set(img.uuid, typeof file0?.size === 'number' ? { uuid: img.uuid, size: file0.size } : { uuid: img.uuid });
  }
  return zfsView(ctx.cn, [...images.values()].sort((a, b) => a.uuid.localeCompare(b.uuid)), changes);
}

export async function viewOf(ctx: TaskContext): Promise<ZfsView> {
  return buildView(ctx, await storeOf(ctx).get(ctx.log));
}

/**
 * Run one zfs command that changes the CN: computed on a copy of its state, which is written
 * durably before it becomes visible. A refused command fails the task with
 * `<what>: Command failed: /sbin/zfs ...\n<stderr>`, as node-zfs's execFile error reads.
 */
export async function zfsWrite(ctx: TaskContext, what: string, op: (view: ZfsView, next: ZfsChanges) => void): Promise<void> {
  const store = storeOf(ctx);
  const current = await store.get(ctx.log);
  const next = current.copy();
  try {
    op(buildView(ctx, current), next);
  } catch (err) {
    if (err instanceof ZfsCommandError) throw new TaskError(`${what}: ${err.execMessage}`);
    throw err;
  }
  await store.commit(next);
}

/** A failed query as the zfs query tasks report it. */
export function queryFailure(what: string, err: ZfsCommandError, viaExecFile: boolean): TaskError {
  return new TaskError(`${what}: ${viaExecFile ? err.execMessage : err.stderr}`);
}
