/**
 * vminfod-style change records for `modify` events, computed with node-vmadm's own diff
 * module (lib/diff.js, a copy of SmartOS's), with NICs matched by mac and disks by path
 * as `vmadm update` does. That module throws on some shapes (null against an object on
 * the same key); then we fall back to whole top-level changes in the same format.
 */
import { createRequire } from 'node:module';
import type { VmChange } from './types.js';

type DiffFn = (a: unknown, b: unknown, opts?: { map?: Record<string, string> }) => VmChange[];

const require = createRequire(import.meta.url);
const vmadmDiff = require('vmadm/lib/diff.js') as DiffFn;

const MAP = { nics: 'mac', disks: 'path' };

function topLevelDiff(a: Record<string, unknown>, b: Record<string, unknown>): VmChange[] {
  const changes: VmChange[] = [];
  for (const k of Object.keys(a)) {
    if (!Object.hasOwn(b, k)) changes.push({ path: [k], prettyPath: k, action: 'removed', oldValue: a[k] });
    else if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) {
      changes.push({ path: [k], prettyPath: k, action: 'changed', oldValue: a[k], newValue: b[k] });
    }
  }
  for (const k of Object.keys(b)) {
    if (!Object.hasOwn(a, k)) changes.push({ path: [k], prettyPath: k, action: 'added', newValue: b[k] });
  }
  return changes;
}

export function diffVms(a: Record<string, unknown>, b: Record<string, unknown>): VmChange[] {
  try {
    return vmadmDiff(a, b, { map: MAP });
  } catch {
    return topLevelDiff(a, b);
  }
}
