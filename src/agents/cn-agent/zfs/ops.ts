/**
 * The `zfs` commands node-zfs runs for the ZFS write tasks, against a CN's ZFS view: each
 * checks what zfs(1M) checks, in its order, and refuses with what it writes to stderr
 * (illumos zfs_main.c and libzfs), or records its change in the CN's ZFS state.
 *
 *   zfs create <fs>              zfs destroy <fs|vol|snap>    zfs rename <from> <to>
 *   zfs snapshot <fs@snap>       zfs rollback -r <snap>       zfs clone <snap> <fs>
 *   zfs set <prop>=<value> <dataset>
 *
 * Datasets derived from the CN's platform, images and VMs are in use: they can be
 * snapshotted, cloned and have properties set, but not destroyed, renamed or rolled past a
 * vmadm snapshot (see the cn-agent README for how that differs from a real CN).
 */
import { isAtOrBelow, nameProblem, parentOf, poolOf, splitSnapshot, usageText, ZfsCommandError, type NameTypes } from './names.js';
import { checkSet } from './props.js';
import type { ZfsChanges } from './state.js';
import type { Dataset, ZfsView } from './model.js';

/** What `zfs create` makes: an empty filesystem refers to (and uses) 23K on SmartOS. */
export const EMPTY_FILESYSTEM_BYTES = 23 * 1024;

function fail(args: readonly string[], stderr: string): never {
  throw new ZfsCommandError(args, stderr);
}

/** zfs_open: the dataset, or the "cannot open" failure. */
function open(view: ZfsView, args: readonly string[], name: string, types: NameTypes): Dataset {
  const why = nameProblem(name, types);
  if (why) fail(args, `cannot open '${name}': ${why}\n`);
  const d = view.byName.get(name);
  if (!d) fail(args, `cannot open '${name}': dataset does not exist\n`);
  const wanted = types === 'any' || (types === 'snapshot') === (d.type === 'snapshot');
  if (!wanted) fail(args, `cannot open '${name}': operation not applicable to datasets of this type\n`);
  return d;
}

/** libzfs check_parents: the parent of a new dataset must be an existing filesystem. */
function checkParents(view: ZfsView, args: readonly string[], name: string): void {
  const parent = parentOf(name);
  if (parent === undefined) fail(args, `cannot create '${name}': missing dataset name\n`);
  const pool = poolOf(parent);
  if (pool !== view.pool.name) fail(args, `cannot create '${name}': no such pool '${pool}'\n`);
  const p = view.byName.get(parent);
  if (!p) fail(args, `cannot create '${name}': parent does not exist\n`);
  if (p.type !== 'filesystem') fail(args, `cannot create '${name}': parent is not a filesystem\n`);
}

/** How zfs fails on a dataset in use: a mounted filesystem cannot be unmounted. */
function busy(args: readonly string[], d: Dataset, verb: string): never {
  if (d.type === 'filesystem' && d.mountpoint.startsWith('/')) fail(args, `cannot unmount '${d.mountpoint}': Device busy\n`);
  fail(args, `cannot ${verb} '${d.name}': dataset is busy\n`);
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

/** Datasets below `d` (children and snapshots, recursively), in `zfs list` order. */
function descendants(view: ZfsView, name: string): Dataset[] {
  return view.datasets.filter((x) => x.name !== name && isAtOrBelow(x.name, name));
}

/** Clones of `snapshot` and everything below them. */
function dependentClones(view: ZfsView, snapshot: string): Dataset[] {
  const out: Dataset[] = [];
  for (const c of view.datasets) {
    if (c.origin === snapshot) out.push(c, ...descendants(view, c.name));
  }
  return out;
}

function list(ds: readonly Dataset[]): string {
  return ds.map((d) => `${d.name}\n`).join('');
}

/** Every own dataset at or below `name` is removed from the state. */
function forget(changes: ZfsChanges, name: string): void {
  for (const k of [...changes.datasets.keys()]) if (isAtOrBelow(k, name)) changes.datasets.delete(k);
  for (const k of [...changes.props.keys()]) if (isAtOrBelow(k, name)) changes.props.delete(k);
}

export function zfsCreate(view: ZfsView, changes: ZfsChanges, name: string): void {
  const args = ['create', name];
  const why = nameProblem(name, 'dataset', true);
  if (why) fail(args, `cannot create '${name}': ${why}\n`);
  checkParents(view, args, name);
  if (view.byName.has(name)) fail(args, `cannot create '${name}': dataset already exists\n`);
  changes.datasets.set(name, {
    type: 'filesystem',
    creation: now(),
    txg: changes.nextTxg(),
    refer: EMPTY_FILESYSTEM_BYTES,
    unique: EMPTY_FILESYSTEM_BYTES,
    props: {},
  });
}

export function zfsDestroy(view: ZfsView, changes: ZfsChanges, name: string): void {
  const args = ['destroy', name];
  const { fs, snap } = splitSnapshot(name);
  if (snap !== undefined) {
    open(view, args, fs, 'dataset');
    const s = view.byName.get(name);
    if (!s || s.type !== 'snapshot') fail(args, 'could not find any snapshots to destroy; check snapshot names.\n');
    const clones = dependentClones(view, name);
    if (clones.length > 0) {
      fail(args, `cannot destroy '${name}': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\n${list(clones)}`);
    }
    if (!s.own) busy(args, s, 'destroy');
    forget(changes, name);
    return;
  }
  const d = open(view, args, name, 'any');
  if (!name.includes('/') && d.type === 'filesystem') {
    fail(
      args,
      `cannot destroy '${name}': operation does not apply to pools\n` +
        `use 'zfs destroy -r ${name}' to destroy all datasets in the pool\n` +
        `use 'zpool destroy ${name}' to destroy the pool itself\n`,
    );
  }
  const below = descendants(view, name);
  if (below.length > 0) {
    fail(args, `cannot destroy '${name}': ${d.type} has children\nuse '-r' to destroy the following datasets:\n${list(below)}`);
  }
  if (!d.own) busy(args, d, 'destroy');
  forget(changes, name);
}

export function zfsSnapshot(view: ZfsView, changes: ZfsChanges, name: string): void {
  const args = ['snapshot', name];
  const { fs, snap } = splitSnapshot(name);
  if (snap === undefined) fail(args, usageText('snapshot'));
  let head: Dataset;
  try {
    head = open(view, args, fs, 'dataset');
  } catch (err) {
    if (err instanceof ZfsCommandError) fail(args, `${err.stderr}${usageText('snapshot')}`);
    throw err;
  }
  const why = nameProblem(name, 'snapshot', true);
  if (why) fail(args, `cannot create snapshot '${name}': ${why}\n`);
  if (view.byName.has(name)) fail(args, `cannot create snapshot '${name}': dataset already exists\n`);
  changes.datasets.set(name, { type: 'snapshot', creation: now(), txg: changes.nextTxg(), refer: head.refer, unique: 0, props: {} });
}

/** `zfs rollback -r`: later snapshots go (unless something was cloned from them). */
export function zfsRollback(view: ZfsView, changes: ZfsChanges, name: string): void {
  const args = ['rollback', '-r', name];
  const target = open(view, args, name, 'snapshot');
  const head = view.byName.get(splitSnapshot(name).fs)!;
  const later = view.datasets.filter(
    (s) =>
      s.type === 'snapshot' &&
      splitSnapshot(s.name).fs === head.name &&
      (s.creation > target.creation || (s.creation === target.creation && s.txg > target.txg)),
  );
  const clones = later.flatMap((s) => dependentClones(view, s.name));
  if (clones.length > 0) {
    fail(
      args,
      `cannot rollback to '${name}': clones of previous snapshots exist\n` +
        `use '-R' to force deletion of the following clones and dependents:\n${list(clones)}`,
    );
  }
  if (later.some((s) => !s.own)) busy(args, head, 'rollback');
  for (const s of later) forget(changes, s.name);
  const own = changes.datasets.get(head.name);
  if (own) own.refer = target.refer;
}

export function zfsClone(view: ZfsView, changes: ZfsChanges, snapshot: string, name: string): void {
  const args = ['clone', snapshot, name];
  const origin = open(view, args, snapshot, 'snapshot');
  const why = nameProblem(name, 'dataset', true);
  if (why) fail(args, `cannot create '${name}': ${why}\n`);
  checkParents(view, args, name);
  if (view.byName.has(name)) fail(args, `cannot create '${name}': dataset already exists\n`);
  const head = view.byName.get(splitSnapshot(snapshot).fs);
  changes.datasets.set(name, {
    type: origin.headType,
    creation: now(),
    txg: changes.nextTxg(),
    refer: origin.refer,
    unique: 0,
    origin: snapshot,
    ...(origin.headType === 'volume' ? { volsize: head?.volsize ?? origin.refer } : {}),
    props: {},
  });
}

export function zfsRename(view: ZfsView, changes: ZfsChanges, name: string, newname: string): void {
  const args = ['rename', name, newname];
  const d = open(view, args, name, 'any');
  if (newname === name) return;
  const toErr = `cannot rename to '${newname}'`;
  let target = newname;
  if (d.type === 'snapshot') {
    const { fs } = splitSnapshot(name);
    if (!newname.includes('@')) target = `${fs}@${newname}`;
    else if (newname.startsWith('@')) target = `${fs}${newname}`;
    else if (splitSnapshot(newname).fs !== fs) fail(args, `${toErr}: snapshots must be part of same dataset\n`);
    const why = nameProblem(target, 'snapshot', true);
    if (why) fail(args, `${toErr}: ${why}\n`);
  } else {
    const why = nameProblem(target, 'dataset', true);
    if (why) fail(args, `${toErr}: ${why}\n`);
    checkParents(view, args, target);
    if (poolOf(target) !== poolOf(name)) fail(args, `${toErr}: datasets must be within same pool\n`);
    if (target.startsWith(`${name}/`)) {
      fail(args, `${toErr}: New dataset name cannot be a descendant of current dataset name\n`);
    }
  }
  if (target === name) return;
  if (!d.own) busy(args, d, 'rename');
  if (view.byName.has(target)) fail(args, `cannot rename '${name}': dataset already exists\n`);
  const moved = (n: string): string => target + n.slice(name.length);
  for (const k of [...changes.datasets.keys()].filter((k) => isAtOrBelow(k, name))) {
    const v = changes.datasets.get(k)!;
    changes.datasets.delete(k);
    changes.datasets.set(moved(k), v);
  }
  for (const k of [...changes.props.keys()].filter((k) => isAtOrBelow(k, name))) {
    const v = changes.props.get(k)!;
    changes.props.delete(k);
    changes.props.set(moved(k), v);
  }
  // A clone keeps its origin snapshot, whatever that snapshot is now called.
  for (const v of changes.datasets.values()) {
    if (v.origin !== undefined && isAtOrBelow(v.origin, name)) v.origin = moved(v.origin);
  }
}

/** One `zfs set <key>=<value> <name>` as node-zfs runs it for each property. */
export function zfsSet(view: ZfsView, changes: ZfsChanges, name: string, key: string, value: string): void {
  const assignment = `${key}=${value}`;
  const args = ['set', assignment, name];
  const eq = assignment.indexOf('=');
  const prop = assignment.slice(0, eq);
  const raw = assignment.slice(eq + 1);
  const d = open(view, args, name, 'any');
  const errbuf = `cannot set property for '${name}'`;
  const checked = checkSet(prop, raw, d.type, d.headType);
  if ('error' in checked) fail(args, `${errbuf}: ${checked.error}\n`);
  const n = Number(checked.value);
  if ((prop === 'quota' && n > 0 && n < d.used) || (prop === 'refquota' && n > 0 && n < d.refer)) {
    fail(args, `${errbuf}: size is less than current used or reserved space\n`);
  }
  if ((prop === 'reservation' || prop === 'refreservation') && n > d.used + d.avail) {
    fail(args, `${errbuf}: size is greater than available space\n`);
  }
  const own = changes.datasets.get(name);
  if (own && d.own) {
    own.props[prop] = checked.value;
    return;
  }
  changes.props.set(name, { ...(changes.props.get(name) ?? {}), [prop]: checked.value });
}
