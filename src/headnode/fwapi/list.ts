/**
 * `GET /rules` as sdc-fwapi answers it (lib/endpoints/rules/index.js LIST_SCHEMA, checked by
 * restify-warden; lib/ufds/filter.js ruleMorayFilter): every given filter must hold (owner,
 * enabled, log, protocol, action, global), each target filter names any of its values on
 * either side (`ip`, `subnet`, `vm`, `wildcard`; `tag` by key, or key and value, where a rule
 * naming only the key matches every value), in Moray's order (by uuid); `fields` adds the
 * `parsed` forms.
 */
import net from 'node:net';
import { isUuid } from '../../common/uuid.js';
import { invalidParams, parsed, type RuleRecord } from './rules.js';

type Params = Record<string, unknown>;

const PARSED_FIELDS = ['parsed.action', 'parsed.ports', 'parsed.protocol', 'parsed.tags'];

function list(v: unknown): unknown[] {
  if (v === undefined) return [];
  if (Array.isArray(v)) return v;
  return typeof v === 'string' ? v.split(',') : [v];
}

function asText(v: unknown): string {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

/** restify-warden's array validators: the invalid values, sorted, and their message. */
function checkArray(field: string, values: unknown[], ok: (s: string) => boolean, single: string, plural: string): { field: string; code: string; invalid: string[]; message: string } | undefined {
  const bad = values.map(asText).filter((s) => !ok(s)).sort();
  if (bad.length === 0) return undefined;
  return { field, code: 'InvalidParameter', invalid: bad, message: bad.length > 1 ? plural : single };
}

function isSubnet(s: string): boolean {
  const m = /^(.+)\/(\d{1,3})$/.exec(s);
  if (!m) return false;
  const fam = net.isIP(m[1]!);
  return fam !== 0 && Number(m[2]) <= (fam === 4 ? 32 : 128);
}

function boolOf(v: unknown): boolean | undefined | 'bad' {
  if (v === undefined) return undefined;
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  return 'bad';
}

function tagObj(tags: readonly (string | [string, unknown])[]): Record<string, { all: boolean; values: unknown[] }> {
  const out: Record<string, { all: boolean; values: unknown[] }> = {};
  for (const t of tags) {
    const key = typeof t === 'string' ? t : t[0];
    out[key] ??= { all: false, values: [] };
    if (typeof t === 'string') out[key]!.all = true;
    else out[key]!.values.push(t[1]);
  }
  return out;
}

export function listRules(all: Iterable<RuleRecord>, p: Params): Record<string, unknown>[] {
  const errors = [];
  const owners = list(p.owner_uuid);
  const vms = list(p.vm);
  const ips = list(p.ip);
  const subnets = list(p.subnet);
  for (const e of [
    checkArray('ip', ips, (s) => net.isIP(s) !== 0, 'invalid IP', 'invalid IPs'),
    checkArray('owner_uuid', owners, isUuid, 'invalid UUID', 'invalid UUID'),
    checkArray('subnet', subnets, isSubnet, 'Subnet must be in CIDR form', 'Subnet must be in CIDR form'),
    checkArray('vm', vms, isUuid, 'invalid UUID', 'invalid UUID'),
  ]) if (e) errors.push(e);
  const enabled = boolOf(p.enabled);
  const log = boolOf(p.log);
  const global = boolOf(p.global);
  for (const [field, v] of [['enabled', enabled], ['global', global], ['log', log]] as const) {
    if (v === 'bad') errors.push({ field, code: 'InvalidParameter', message: 'must be a boolean value' });
  }
  if (p.action !== undefined && p.action !== 'block' && p.action !== 'allow') {
    errors.push({ field: 'action', code: 'InvalidParameter', message: 'action must be "block" or "allow"' });
  }
  if (p.protocol !== undefined && typeof p.protocol !== 'string') errors.push({ field: 'protocol', code: 'InvalidParameter', message: 'must be a string' });
  const fields = list(p.fields).map(asText);
  const badFields = fields.filter((f) => !PARSED_FIELDS.includes(f)).sort();
  if (badFields.length > 0) errors.push({ field: 'fields', code: 'InvalidParameter', invalid: badFields, message: 'unknown field' });
  if (errors.length > 0) throw invalidParams(errors.sort((a, b) => a.field.localeCompare(b.field)));

  // tag: a key, keys, or {key: value | [values] | true}
  let tags: Record<string, unknown> | undefined;
  if (p.tag !== undefined) {
    tags = {};
    if (typeof p.tag === 'object' && p.tag !== null && !Array.isArray(p.tag)) Object.assign(tags, p.tag);
    else for (const k of Array.isArray(p.tag) ? p.tag : [p.tag]) tags[asText(k)] = true;
  }
  const wildcards = list(p.wildcard).map(asText);

  const out: RuleRecord[] = [];
  for (const r of all) {
    if (owners.length > 0 && !owners.includes(r.owner_uuid)) continue;
    if (global === true && r.owner_uuid !== undefined) continue;
    if (enabled !== undefined && r.enabled !== enabled) continue;
    if (log !== undefined && r.log !== log) continue;
    const fw = parsed(r);
    if (p.protocol !== undefined && (fw as unknown as { protocol: string }).protocol !== p.protocol) continue;
    if (p.action !== undefined && fw.action !== p.action) continue;
    const sides = [fw.from, fw.to] as unknown as Record<string, unknown[]>[];
    const names = (kind: string, values: unknown[]): boolean => sides.some((s) => (s[kind] ?? []).some((x) => values.map(asText).includes(String(x))));
    if (ips.length > 0 && !names('ips', ips)) continue;
    if (subnets.length > 0 && !names('subnets', subnets)) continue;
    if (vms.length > 0 && !names('vms', vms)) continue;
    if (wildcards.length > 0 && !names('wildcards', wildcards.map((w) => (w === 'all vms' ? 'vmall' : w)))) continue;
    if (tags) {
      const t = tags;
      const hit = sides.some((s) =>
        ((s.tags ?? []) as (string | [string, unknown])[]).some((tag) => {
          const key = typeof tag === 'string' ? tag : tag[0];
          if (!Object.prototype.hasOwnProperty.call(t, key)) return false;
          const want = t[key];
          if (want === true || want === 'true' || typeof tag === 'string') return true;
          return (Array.isArray(want) ? want : [want]).some((w) => String(w) === String(tag[1]));
        }),
      );
      if (!hit) continue;
    }
    out.push(r);
  }
  out.sort((a, b) => a.uuid.localeCompare(b.uuid));
  if (fields.length === 0) return out;
  return out.map((r) => {
    const fw = parsed(r) as unknown as { action: string; protocol: string; ports?: unknown[]; from: { tags: (string | [string, unknown])[] }; to: { tags: (string | [string, unknown])[] } };
    const pr: Record<string, unknown> = {};
    if (fields.includes('parsed.action')) pr.action = fw.action;
    if (fields.includes('parsed.ports') && fw.ports) pr.ports = fw.ports.map((x) => (x === 'all' ? x : typeof x === 'object' ? x : Number(x)));
    if (fields.includes('parsed.protocol')) pr.protocol = fw.protocol;
    if (fields.includes('parsed.tags')) {
      pr.fromtags = tagObj(fw.from.tags);
      pr.totags = tagObj(fw.to.tags);
    }
    return { ...r, parsed: pr };
  });
}
