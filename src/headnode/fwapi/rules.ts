/**
 * FWAPI's rules (sdc-fwapi lib/rule.js, lib/persist.js, lib/endpoints/resolve.js): made and
 * checked by `fwrule` as FWAPI makes them (maxVersion 4, subnet masks enforced, `global` or
 * `owner_uuid` required), serialized as FWAPI serializes them, and the selections FWAPI's
 * Moray filters make: the rules of a VM (vmRules: the owner's and global rules naming one of
 * the VMs, one of the tags, or all VMs) and what is on their other side (resolveTargets).
 */
import { createRequire } from 'node:module';
import { MockcloudError, type FieldError } from '../../common/errors.js';

export interface FwRuleObj {
  uuid: string;
  version: string;
  owner_uuid?: string;
  global?: boolean;
  action: string;
  priority: number;
  tags: (string | [string, unknown])[];
  vms: string[];
  wildcards: string[];
  from: Side;
  to: Side;
  serialize(fields?: string[]): Record<string, unknown>;
}
interface Side {
  tags: (string | [string, unknown])[];
  vms: string[];
  wildcards: string[];
}

const fwrule = createRequire(import.meta.url)('fwrule') as {
  FwRule: new (data: object, opts?: object) => FwRuleObj;
  generateVersion(): string;
};

/** FWAPI's default fwrule language version (config `fwrule_version`). */
export const FWRULE_VERSION = 4;

export type RuleRecord = Record<string, unknown> & { uuid: string; rule: string };

/** `InvalidParameters` as lib/errors.js InvalidParamsError makes it (422). */
export function invalidParams(errors: (FieldError & Record<string, unknown>)[]): MockcloudError {
  return new MockcloudError('InvalidParameters', 'Invalid parameters', { errors });
}

/** lib/endpoints/rules/index.js createParamErr: fwrule's errors as InvalidParameters. */
function paramError(err: unknown): MockcloudError {
  const e = err as { ase_errors?: { field?: string; message: string }[]; field?: string; message?: string };
  const list = e.ase_errors ?? [e];
  return invalidParams(list.map((x) => ({ field: x.field ?? 'rule', code: 'InvalidParameter', message: x.message ?? 'Invalid parameter' })));
}

/** A rule from API parameters (POST /rules, PUT /rules/:uuid); throws FWAPI's 422 when invalid. */
export function makeRule(params: Record<string, unknown>): FwRuleObj {
  try {
    return new fwrule.FwRule(params, { maxVersion: FWRULE_VERSION, enforceSubnetMask: true, enforceGlobal: true });
  } catch (err) {
    throw paramError(err);
  }
}

export function newVersion(): string {
  return fwrule.generateVersion();
}

const parsedCache = new Map<string, FwRuleObj>();

/** A stored rule, parsed (cached by uuid and version). */
export function parsed(r: RuleRecord): FwRuleObj {
  const key = `${r.uuid}@${String(r.version)}`;
  let p = parsedCache.get(key);
  if (!p) {
    p = new fwrule.FwRule(r, { maxVersion: FWRULE_VERSION });
    if (parsedCache.size > 50_000) parsedCache.clear();
    parsedCache.set(key, p);
  }
  return p;
}

/** The selection of `POST /resolve` and `GET /firewalls/vms/:uuid` (persist.js vmRules). */
export interface VmRulesFilter {
  owner_uuid?: string;
  vms?: readonly string[];
  /** key -> true (any value), a value, or values. */
  tags?: Record<string, unknown>;
}

function tagWanted(key: string, val: unknown, tags: Record<string, unknown>): boolean {
  if (!Object.prototype.hasOwnProperty.call(tags, key)) return false;
  const want = tags[key];
  if (want === true || val === true || val === undefined) return true;
  return (Array.isArray(want) ? want : [want]).some((w) => String(w) === String(val));
}

export function vmRules(all: Iterable<RuleRecord>, f: VmRulesFilter): RuleRecord[] {
  const vms = new Set(f.vms ?? []);
  const out: RuleRecord[] = [];
  for (const r of all) {
    if (f.owner_uuid !== undefined && r.owner_uuid !== undefined && r.owner_uuid !== f.owner_uuid) continue;
    const p = parsed(r);
    const hit =
      p.wildcards.includes('vmall') ||
      p.vms.some((v) => vms.has(v)) ||
      (f.tags !== undefined && p.tags.some((t) => (typeof t === 'string' ? tagWanted(t, true, f.tags!) : tagWanted(t[0], t[1], f.tags!))));
    if (hit) out.push(r);
  }
  return out;
}

/** resolve.js isNoOpRule: the default policy already does it (outbound allowed, inbound blocked). */
function isNoOp(p: FwRuleObj, dir: 'from' | 'to'): boolean {
  if (p.priority > 0) return false;
  return (dir === 'from' && p.action === 'allow') || (dir === 'to' && p.action === 'block');
}

/** resolve.js resolveTargets: the tags, VMs and `all vms` on the other side of the matching sides. */
export function resolveTargets(rules: readonly RuleRecord[], f: VmRulesFilter): { tags: Record<string, true | unknown[]>; vms: string[]; allVMs: boolean } {
  const tags: Record<string, true | unknown[]> = {};
  const vms = new Set<string>();
  let allVMs = false;
  const wanted = new Set(f.vms ?? []);
  for (const r of rules) {
    const p = parsed(r);
    for (const dir of ['from', 'to'] as const) {
      const side = p[dir];
      const matches =
        side.wildcards.includes('vmall') ||
        (f.tags !== undefined && side.tags.some((t) => (typeof t === 'string' ? tagWanted(t, true, f.tags!) : tagWanted(t[0], t[1], f.tags!)))) ||
        side.vms.some((v) => wanted.has(v));
      if (!matches || isNoOp(p, dir)) continue;
      const other = p[dir === 'from' ? 'to' : 'from'];
      if (other.wildcards.includes('vmall')) allVMs = true;
      for (const t of other.tags) {
        if (typeof t === 'string') tags[t] = true;
        else if (tags[t[0]] !== true) {
          const list = (tags[t[0]] ??= []) as unknown[];
          list.push(t[1]);
        }
      }
      for (const v of other.vms) vms.add(v);
    }
  }
  return { tags, vms: [...vms].sort(), allVMs };
}
