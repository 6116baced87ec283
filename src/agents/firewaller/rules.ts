/**
 * Firewall rules as fwadm holds them, parsed by `fwrule` (Triton's own parser, the one fwadm
 * and FWAPI use), and the matching fwadm does (smartos-live src/fw/lib/filter.js vmsByRules,
 * rulesByVMs, rulesByRVMs; fw.js vmsOnSide, addOtherSideRemoteTargets). A rule applies to a VM
 * when any of its targets (`vm <uuid>`, `tag <key>`, `tag <key> = <value>`, `all vms`, `ip`)
 * names the VM and the rule is global or has the VM's owner.
 */
import { createRequire } from 'node:module';

/** The parts of fwrule's FwRule this code reads. */
interface FwRuleObj {
  uuid: string;
  version: string;
  owner_uuid?: string;
  global?: boolean;
  enabled: boolean;
  ips: string[];
  tags: (string | [string, string | number])[];
  vms: string[];
  wildcards: string[];
  from: Side;
  to: Side;
  serialize(): Record<string, unknown>;
}
interface Side {
  ips: string[];
  tags: (string | [string, string | number])[];
  vms: string[];
  wildcards: string[];
}

const fwrule = createRequire(import.meta.url)('fwrule') as { FwRule: new (data: object, opts?: object) => FwRuleObj };

/** A rule as FWAPI serializes it (and fwadm stores it, with `created_by`). */
export interface RuleData {
  uuid: string;
  rule: string;
  enabled: boolean;
  version?: string;
  owner_uuid?: string;
  global?: boolean;
  log?: boolean;
  description?: string;
  created_by?: string;
  [key: string]: unknown;
}

export interface ParsedRule {
  data: RuleData;
  fw: FwRuleObj;
}

const cache = new Map<string, ParsedRule>();
const CACHE_MAX = 10_000;

/** Parse a rule FWAPI sent; throws fwrule's error for one that does not parse. */
export function parseRule(data: RuleData): ParsedRule {
  const key = `${data.uuid}\n${data.version ?? ''}\n${data.rule}\n${data.owner_uuid ?? ''}\n${String(data.enabled)}`;
  let p = cache.get(key);
  if (!p) {
    const fw = new fwrule.FwRule({ ...data });
    p = { data, fw };
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(key, p);
  }
  return p.data === data ? p : { data, fw: p.fw };
}

/** A VM as fwadm's VM lookup keeps it (fw.js createVMlookup). */
export interface FwVm {
  uuid: string;
  owner_uuid?: string;
  enabled: boolean;
  tags: Record<string, unknown>;
  ips: string[];
  state?: string;
}

/** A remote VM as fwadm stores it (fw/lib/rvm.js; the firewaller's vmapi.js buildRVM). */
export interface RemoteVm {
  uuid: string;
  ips: string[];
  owner_uuid?: string;
  tags?: Record<string, unknown>;
  enabled?: boolean;
}

function ownerOk(rule: FwRuleObj, owner: string | undefined): boolean {
  return !rule.owner_uuid || rule.owner_uuid === owner;
}

function tagMatches(t: string | [string, string | number], tags: Record<string, unknown> | undefined): boolean {
  if (!tags) return false;
  if (typeof t === 'string') return Object.prototype.hasOwnProperty.call(tags, t);
  return Object.prototype.hasOwnProperty.call(tags, t[0]) && String(tags[t[0]]) === String(t[1]);
}

/** filter.js vmsByRules for one rule and one VM (`all vms`, vm, tag, ip targets of either side). */
export function ruleAppliesTo(rule: FwRuleObj, vm: { uuid: string; owner_uuid?: string; tags?: Record<string, unknown>; ips?: string[] }): boolean {
  if (!ownerOk(rule, vm.owner_uuid)) return false;
  if (rule.wildcards.includes('vmall')) return true;
  if (rule.vms.includes(vm.uuid)) return true;
  if (rule.tags.some((t) => tagMatches(t, vm.tags))) return true;
  return vm.ips !== undefined && rule.ips.some((ip) => vm.ips!.includes(ip));
}

/** fw.js vmsOnSide: the VMs a side of a rule names (vms, tags, `all vms`). */
export function sideNames(rule: FwRuleObj, side: Side, vm: FwVm): boolean {
  if (!ownerOk(rule, vm.owner_uuid)) return false;
  if (side.wildcards.includes('vmall')) return true;
  if (side.vms.includes(vm.uuid)) return true;
  return side.tags.some((t) => tagMatches(t, vm.tags));
}

/** filter.js rulesByRVMs: a remote VM matters to a rule naming it by tag, uuid or `all vms`. */
export function ruleNamesRemote(rule: FwRuleObj, rvm: RemoteVm): boolean {
  if (!ownerOk(rule, rvm.owner_uuid)) return false;
  if (rule.wildcards.includes('vmall')) return true;
  if (rule.vms.includes(rvm.uuid)) return true;
  return rule.tags.some((t) => tagMatches(t, rvm.tags));
}

/** What VMAPI must be asked for: the other sides of the rules from the local VMs they name. */
export interface RemoteTargets {
  tags?: Record<string, true | string | (string | number)[] | number>;
  vms?: string[];
  allVMs?: boolean;
}

/** fw.js getRemoteTargets / addOtherSideRemoteTargets. */
export function remoteTargets(rule: FwRuleObj, localVms: readonly FwVm[]): RemoteTargets {
  const out: RemoteTargets = {};
  const local = new Set(localVms.map((v) => v.uuid));
  const vms = new Set<string>();
  for (const [side, other] of [[rule.from, rule.to], [rule.to, rule.from]] as const) {
    if (!localVms.some((vm) => sideNames(rule, side, vm))) continue;
    for (const tag of other.tags) {
      out.tags ??= {};
      const [key, val] = typeof tag === 'string' ? [tag, true as const] : [tag[0], tag[1]];
      const cur = out.tags[key];
      if (cur === undefined) out.tags[key] = val;
      else if (cur !== true) {
        if (val === true) out.tags[key] = true;
        else {
          const list = Array.isArray(cur) ? cur : [cur];
          if (!list.includes(val)) list.push(val);
          out.tags[key] = list;
        }
      }
    }
    for (const v of other.vms) if (!local.has(v)) vms.add(v);
    if (other.wildcards.includes('vmall')) out.allVMs = true;
  }
  if (vms.size > 0) out.vms = [...vms];
  return out;
}
