/**
 * The checks of NAPI's network schemas (sdc-napi lib/models/network.js, lib/util/validate.js):
 * field validators (subnet, addresses, routes, MTU, nic tag, fields, VxLAN ids, subnet
 * prefixes, UUID prefixes) and the cross-field checks run after them, in NAPI's order
 * (fabric owner, subnet allocation, provision range with private fabrics and overlaps, MTU).
 */
import { broadcastAddress, cidrContains, isRfc1918, type Cidr } from '../../common/ipv4.js';
import { napiSubnet, napiIpv4 } from './addr.js';
import { invalidParam, missingParam, usedByParam, type NapiFieldError } from './errors.js';
import { cidrOf, type NetworkRecord } from './model.js';
import { arrayify, problem } from './validate.js';
import { ipv4, type StateCtx } from './validators.js';

export const VALID_FIELDS = [
  'description', 'family', 'fabric', 'gateway', 'gateway_provisioned', 'internet_nat', 'mtu', 'name', 'netmask',
  'nic_tag', 'owner_uuid', 'owner_uuids', 'provision_end_ip', 'provision_start_ip', 'resolvers', 'routes', 'subnet',
  'uuid', 'vlan_id', 'vnet_id',
];

export function fieldsArray(_: unknown, name: string, v: unknown): string[] {
  if (!Array.isArray(v)) throw problem(invalidParam(name, 'must be an array of strings'));
  if (v.length === 0) throw problem(invalidParam(name, 'must not be an empty array'));
  if (v.length > VALID_FIELDS.length) throw problem(invalidParam(name, `can only specify a maximum of ${VALID_FIELDS.length} fields`));
  for (const f of v) {
    if (typeof f !== 'string') throw problem(invalidParam(name, 'must be an array of strings'));
    if (!VALID_FIELDS.includes(f)) throw problem(invalidParam(name, 'unknown field specified'));
  }
  return v as string[];
}

export function subnet(_: unknown, name: string, v: unknown): { multi: Record<string, unknown> } {
  if (typeof v !== 'string') throw problem(invalidParam(name, 'must be a string'));
  const parts = v.split('/');
  if (parts.length !== 2) throw problem(invalidParam(name, 'Subnet must be in CIDR form'));
  if (napiIpv4(parts[0]) === undefined) throw problem(invalidParam(name, 'Subnet IP invalid'));
  const bits = Number(parts[1]);
  if (!/^\d+$/.test(parts[1]!) || bits < 8 || bits > 32) throw problem(invalidParam(name, 'Subnet bits invalid'));
  const cidr = napiSubnet(v);
  if (!cidr) throw problem(invalidParam(name, 'invalid CIDR format'));
  return { multi: { subnet: cidr } };
}

export function ipArray(_: unknown, name: string, v: unknown): number[] {
  if (!Array.isArray(v) && typeof v !== 'string') throw problem(invalidParam(name, 'must be an array of strings'));
  const bad: unknown[] = [];
  const ips: number[] = [];
  for (const item of arrayify(v)) {
    if (typeof item !== 'string') {
      bad.push(item);
      continue;
    }
    const s = item.replace(/\s+/, '');
    if (!s) continue;
    const ip = napiIpv4(s);
    if (ip === undefined) bad.push(s);
    else ips.push(ip);
  }
  if (bad.length > 0) throw problem(invalidParam(name, `invalid IP${bad.length === 1 ? '' : 's'}`, { invalid: bad }));
  return ips;
}

export function gateway(_: unknown, name: string, v: unknown): number | null {
  if (v === null || v === '') return null;
  return ipv4(null, name, v);
}

export function routes(_: unknown, name: string, v: unknown): { multi: Record<string, unknown> } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw problem(invalidParam(name, 'must be an object'));
  const out: Record<string, string> = {};
  const invalid: unknown[] = [];
  for (const [dst, gw] of Object.entries(v as Record<string, unknown>)) {
    const dstOk = dst.includes('/') ? parseCidrLoose(dst) : napiIpv4(dst) !== undefined;
    const gwIp = napiIpv4(gw);
    if (!dstOk) invalid.push(dst);
    if (gwIp === undefined) invalid.push(gw);
    if (dstOk && gwIp !== undefined) out[dst] = gw as string;
  }
  if (invalid.length > 0) throw problem(invalidParam(name, `invalid route${invalid.length === 1 ? '' : 's'}`, { invalid }));
  return { multi: { [name]: out } };
}

function parseCidrLoose(s: string): boolean {
  const [ip, bits] = s.split('/');
  return napiIpv4(ip) !== undefined && /^\d{1,2}$/.test(bits ?? '') && Number(bits) <= 32;
}

export function networkMtu(_: unknown, name: string, v: unknown): number {
  if (typeof v !== 'number' || v < 576 || v > 9000) throw problem(invalidParam(name, 'mtu must be a number between 576 and 9000'));
  return v;
}

export function nicTagExists(ctx: StateCtx, name: string, v: unknown): string {
  if (typeof v !== 'string' && !Array.isArray(v)) throw problem(invalidParam(name, 'must be an array'));
  const tags = arrayify(v);
  if (tags.length === 0) throw problem(invalidParam(name, 'must not be empty'));
  if (tags.length > 1) throw problem(invalidParam(name, 'must only specify one nic tag'));
  if (typeof tags[0] !== 'string') throw problem(invalidParam(name, 'must be a string', { invalid: tags }));
  if (!ctx.state.nicTags.has(tags[0])) throw problem(invalidParam(name, 'nic tag does not exist'));
  return tags[0];
}

/** restify-warden's `validateUUIDPrefix` (a plain non-UUID names its field "Invalid UUID", as warden does). */
export function uuidPrefix(_: unknown, name: string, v: unknown): string {
  if (typeof v !== 'string') throw problem(invalidParam(name, 'must be a string'));
  if (v.length > 64) throw problem(invalidParam(name, 'must not be longer than 64 characters'));
  if (v.trim() === '') throw problem(invalidParam(name, 'must not be empty'));
  const stars = (v.match(/\*/g) ?? []).length;
  if (stars > 1) throw problem(invalidParam(name, 'need only 1 wildcard'));
  if (stars === 1 && !v.endsWith('*')) throw problem(invalidParam(name, 'only UUID prefixes are allowed'));
  if (stars === 1 && !/^[0-9a-f*-]+$/.test(v)) throw problem(invalidParam(name, 'UUID prefix has invalid chars'));
  if (stars === 0 && !/^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/i.test(v)) {
    throw problem(invalidParam('Invalid UUID'));
  }
  return v;
}

/** What the range and overlap checks need of a network (new or existing). */
export interface NetShape {
  subnet_start: number;
  subnet_bits: number;
  nic_tag: string;
  fabric?: boolean;
  vnet_id?: number;
}

/**
 * `validateProvisionRange`: the provision range and gateway inside the subnet, not its
 * broadcast address, start before end; then a fabric's subnet must be private; then no
 * overlap with another network (fabrics: those of the same vnet_id; other networks: other
 * non-fabric networks, unless the subnet is private).
 */
export function checkRange(ctx: StateCtx, net: NetShape, parsed: Record<string, unknown>, self?: string): void {
  const cidr = cidrOf(net as NetworkRecord);
  const errs: NapiFieldError[] = [];
  const start = parsed.provision_start_ip as number | undefined;
  const end = parsed.provision_end_ip as number | undefined;
  const bcast = broadcastAddress(cidr);
  let s = start;
  let e = end;
  if (s !== undefined && !cidrContains(cidr, s)) {
    errs.push(invalidParam('provision_start_ip', 'provision_start_ip cannot be outside subnet'));
    s = undefined;
  }
  if (e !== undefined && !cidrContains(cidr, e)) {
    errs.push(invalidParam('provision_end_ip', 'provision_end_ip cannot be outside subnet'));
    e = undefined;
  }
  if (typeof parsed.gateway === 'number' && !cidrContains(cidr, parsed.gateway)) {
    errs.push(invalidParam('gateway', 'gateway cannot be outside subnet'));
  }
  if (s !== undefined && s === bcast) {
    errs.push(invalidParam('provision_start_ip', 'provision_start_ip cannot be the broadcast address'));
    s = undefined;
  }
  if (e !== undefined && e === bcast) {
    errs.push(invalidParam('provision_end_ip', 'provision_end_ip cannot be the broadcast address'));
    e = undefined;
  }
  if (s !== undefined && e !== undefined && s >= e) {
    errs.push(invalidParam('provision_end_ip', 'provision_start_ip must be before provision_end_ip'));
    errs.push(invalidParam('provision_start_ip', 'provision_start_ip must be before provision_end_ip'));
  }
  if (errs.length > 0) throw problem(errs);
  if (net.fabric && !isRfc1918(cidr)) throw problem(invalidParam('subnet', 'subnet must be within private ranges'));
  checkOverlap(ctx, cidr, net, self);
}

/** `validateNicTagMTU`: a network's MTU no larger than its nic tag's. */
export function checkMtu(ctx: StateCtx, nicTag: string, parsed: Record<string, unknown>): void {
  if (typeof parsed.mtu !== 'number') return;
  const tag = ctx.state.nicTags.get(nicTag);
  if (tag && tag.mtu < parsed.mtu) throw problem(invalidParam('mtu', 'network mtu must be under nic_tag mtu'));
}

/** `validateProvisionRange`'s last check (OVERLAP_NORMAL_NET_SQL / OVERLAP_FABRIC_NET_SQL). */
function checkOverlap(ctx: StateCtx, cidr: Cidr, net: NetShape, self: string | undefined): void {
  // RFC 1918 (private) subnets may overlap: they can sit on separate physical networks.
  if (!net.fabric && isRfc1918(cidr)) return;
  const end = broadcastAddress(cidr);
  const overlapping = [...ctx.state.networks.values()]
    .filter((n) => n.uuid !== self)
    .filter((n) => (net.fabric ? n.fabric === true && n.vnet_id === net.vnet_id : n.fabric !== true))
    .filter((n) => {
      const c = cidrOf(n);
      return c.start <= end && broadcastAddress(c) >= cidr.start;
    })
    .map((n) => usedByParam('subnet', 'network', n.uuid, 'subnet overlaps with another network'))
    .sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
  if (overlapping.length) throw problem(overlapping);
}

/** lib/util/validate.js `validateVxlanID`. */
export function vxlan(_: unknown, name: string, v: unknown): number {
  const id = Number(v);
  if (Number.parseInt(String(v), 10) !== id || id < 0 || id > 16777215) {
    throw problem(invalidParam(name, 'VNET ID must be a number between 0 and 16777215'));
  }
  return id;
}

/** lib/util/validate.js `validateSubnetPrefix`. */
export function subnetPrefix(_: unknown, name: string, v: unknown): number {
  if (typeof v !== 'number') throw problem(invalidParam(name, 'Subnet prefix should be number'));
  if (v !== 24) throw problem(invalidParam(name, 'Only /24 is supported'));
  return v;
}

/** `validateFabricOwner`: a fabric network has exactly one owner. */
export function checkFabricOwner(parsed: Record<string, unknown>): void {
  if (!parsed.fabric) return;
  if (!Array.isArray(parsed.owner_uuids)) throw problem(missingParam('owner_uuids'));
  if (parsed.owner_uuids.length !== 1) throw problem(invalidParam('owner_uuids', 'Fabric networks must have exactly one owner'));
}

/**
 * `validateSubnetAlloc`: subnet auto-allocation is off in this NAPI (`autoAllocSubnets`
 * false); otherwise the subnet and provision range are required and `subnet_prefix` refused.
 */
export function checkSubnetAlloc(raw: Record<string, unknown>, parsed: Record<string, unknown>): void {
  if (parsed.subnet_alloc) throw problem(invalidParam('subnet_auto_alloc', 'Subnet allocation is not enabled on this instance'));
  const errs: NapiFieldError[] = [];
  if (parsed.subnet_prefix !== undefined) errs.push(invalidParam('subnet_prefix', 'Auto allocation parameter not allowed'));
  for (const p of ['provision_end_ip', 'provision_start_ip', 'subnet']) if (raw[p] === undefined) errs.push(missingParam(p));
  errs.sort((a, b) => (String(a.field) < String(b.field) ? -1 : String(a.field) > String(b.field) ? 1 : 0));
  if (errs.length > 0) throw problem(errs);
}

/** `nameStr`: fabric network names are unique per owner, all others DC-wide. */
export function nameStr(n: { name: string; fabric?: boolean; owner_uuids?: string[] }): string {
  return `${n.fabric && n.owner_uuids ? n.owner_uuids[0] : 'global'}:${n.name}`;
}
