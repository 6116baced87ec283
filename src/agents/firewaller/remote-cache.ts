/**
 * What firewaller has already asked VMAPI for, per owner (sdc-firewaller-agent lib/cache.js
 * VMCache): the remote VMs by uuid, by tag (a value, or every value) or all of them, so that a
 * rule naming the same remote VMs again asks nothing new.
 */
import type { RemoteTargets } from './rules.js';

/** The remote targets already asked of VMAPI, per owner (lib/cache.js VMCache). */
interface OwnerCache {
  allVMs: boolean;
  tags: Map<string, true | Set<string>>;
  vms: Set<string>;
}

/** Each owner's remote targets already asked for. */
export type RemoteCache = Map<string, OwnerCache>;

function ownerCache(cache: RemoteCache, owner: string): OwnerCache {
  let c = cache.get(owner);
  if (!c) cache.set(owner, (c = { allVMs: false, tags: new Map(), vms: new Set() }));
  return c;
}

export function addToCache(cache: RemoteCache, owner: string | undefined, t: RemoteTargets): void {
  if (!owner) return;
  const c = ownerCache(cache, owner);
  if (t.allVMs) c.allVMs = true;
  for (const v of t.vms ?? []) c.vms.add(v);
  for (const [k, v] of Object.entries(t.tags ?? {})) {
    if (v === true) c.tags.set(k, true);
    else {
      const cur = c.tags.get(k);
      if (cur === true) continue;
      const set = cur ?? new Set<string>();
      for (const x of Array.isArray(v) ? v : [v]) set.add(String(x));
      c.tags.set(k, set);
    }
  }
}

/** cache.js missing: the targets not yet asked for (undefined: none). */
export function missingTargets(cache: RemoteCache, owner: string, t: RemoteTargets): RemoteTargets | undefined {
  const c = ownerCache(cache, owner);
  if (c.allVMs) return undefined;
  if (t.allVMs) return { allVMs: true };
  const out: RemoteTargets = {};
  const vms = (t.vms ?? []).filter((v) => !c.vms.has(v));
  if (vms.length > 0) out.vms = vms;
  for (const [k, v] of Object.entries(t.tags ?? {})) {
    const cur = c.tags.get(k);
    if (cur === true) continue;
    if (v === true) {
      (out.tags ??= {})[k] = true;
      continue;
    }
    const vals = (Array.isArray(v) ? v : [v]).filter((x) => !cur?.has(String(x)));
    if (vals.length > 0) (out.tags ??= {})[k] = vals;
  }
  return out.vms || out.tags ? out : undefined;
}
