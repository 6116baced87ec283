/**
 * Networks and their IP tables (sdc-napi lib/models/network.js, lib/models/ip): IPv4
 * networks on an existing nic tag with a subnet, provision range, gateway, resolvers and
 * routes; unique names; the admin network reachable by the name `admin`; immutable
 * subnet / nic_tag / vlan_id; no delete while NICs use it. Changes to gateway, resolvers
 * and routes go out on the changefeed, which net-agent turns into VM updates.
 */
import { newUuid } from '../../common/uuid.js';
import { MockcloudError } from '../../common/errors.js';
import { broadcastAddress, cidrContains, formatMac, networkAddress, parseCidr, parseIpv4, type Cidr } from './addr.js';
import type { NapiContext } from './context.js';
import { duplicateParam, inUseError, invalidParam, invalidParamsError, missingParam, notFound, usedByParam, type NapiFieldError } from './errors.js';
import { cidrOf, etagOf, type NetworkRecord } from './model.js';
import {
  arrayify,
  bool,
  enumOf,
  limit,
  offset,
  page,
  problem,
  string,
  stringOrArray,
  uuid,
  uuidArray,
  validateParams,
  vlan,
  type Schema,
} from './validate.js';
import { findNetwork, ipv4, type StateCtx } from './validators.js';

const VALID_FIELDS = [
  'description', 'family', 'fabric', 'gateway', 'gateway_provisioned', 'internet_nat', 'mtu', 'name', 'netmask',
  'nic_tag', 'owner_uuid', 'owner_uuids', 'provision_end_ip', 'provision_start_ip', 'resolvers', 'routes', 'subnet',
  'uuid', 'vlan_id', 'vnet_id',
];

function fieldsArray(_: unknown, name: string, v: unknown): string[] {
  if (!Array.isArray(v)) throw problem(invalidParam(name, 'must be an array of strings'));
  if (v.length === 0) throw problem(invalidParam(name, 'must not be an empty array'));
  if (v.length > VALID_FIELDS.length) throw problem(invalidParam(name, `can only specify a maximum of ${VALID_FIELDS.length} fields`));
  for (const f of v) {
    if (typeof f !== 'string') throw problem(invalidParam(name, 'must be an array of strings'));
    if (!VALID_FIELDS.includes(f)) throw problem(invalidParam(name, 'unknown field specified'));
  }
  return v as string[];
}

function subnet(_: unknown, name: string, v: unknown): { multi: Record<string, unknown> } {
  if (typeof v !== 'string') throw problem(invalidParam(name, 'must be a string'));
  const parts = v.split('/');
  if (parts.length !== 2) throw problem(invalidParam(name, 'Subnet must be in CIDR form'));
  if (parseIpv4(parts[0]) === undefined) throw problem(invalidParam(name, 'Subnet IP invalid'));
  const bits = Number(parts[1]);
  if (!/^\d+$/.test(parts[1]!) || bits < 8 || bits > 32) throw problem(invalidParam(name, 'Subnet bits invalid'));
  const cidr = parseCidr(v);
  if (!cidr) throw problem(invalidParam(name, 'invalid CIDR format'));
  return { multi: { subnet: cidr } };
}

function ipArray(_: unknown, name: string, v: unknown): number[] {
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
    const ip = parseIpv4(s);
    if (ip === undefined) bad.push(s);
    else ips.push(ip);
  }
  if (bad.length > 0) throw problem(invalidParam(name, `invalid IP${bad.length === 1 ? '' : 's'}`, { invalid: bad }));
  return ips;
}

function gateway(_: unknown, name: string, v: unknown): number | null {
  if (v === null || v === '') return null;
  return ipv4(null, name, v);
}

function routes(_: unknown, name: string, v: unknown): { multi: Record<string, unknown> } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw problem(invalidParam(name, 'must be an object'));
  const out: Record<string, string> = {};
  const invalid: unknown[] = [];
  for (const [dst, gw] of Object.entries(v as Record<string, unknown>)) {
    const dstOk = dst.includes('/') ? parseCidrLoose(dst) : parseIpv4(dst) !== undefined;
    const gwIp = parseIpv4(gw);
    if (!dstOk) invalid.push(dst);
    if (gwIp === undefined) invalid.push(gw);
    if (dstOk && gwIp !== undefined) out[dst] = gw as string;
  }
  if (invalid.length > 0) throw problem(invalidParam(name, `invalid route${invalid.length === 1 ? '' : 's'}`, { invalid }));
  return { multi: { [name]: out } };
}

function parseCidrLoose(s: string): boolean {
  const [ip, bits] = s.split('/');
  return parseIpv4(ip) !== undefined && /^\d{1,2}$/.test(bits ?? '') && Number(bits) <= 32;
}

function networkMtu(_: unknown, name: string, v: unknown): number {
  if (typeof v !== 'number' || v < 576 || v > 9000) throw problem(invalidParam(name, 'mtu must be a number between 576 and 9000'));
  return v;
}

function nicTagExists(ctx: StateCtx, name: string, v: unknown): string {
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

/** Range, gateway and MTU checks shared by create and update (validateProvisionRange). */
function checkRange(
  ctx: StateCtx,
  net: Pick<NetworkRecord, 'subnet_start' | 'subnet_bits' | 'nic_tag'>,
  parsed: Record<string, unknown>,
  self?: string,
): void {
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
  if (typeof parsed.mtu === 'number') {
    const tag = ctx.state.nicTags.get(net.nic_tag);
    if (tag && tag.mtu < parsed.mtu) errs.push(invalidParam('mtu', 'network mtu must be under nic_tag mtu'));
  }
  if (errs.length > 0) throw problem(errs);
  checkOverlap(ctx, cidr, self);
}

/** RFC 1918 (private) IPv4 subnets may overlap: they can sit on separate physical networks. */
function isRfc1918(c: Cidr): boolean {
  const inside = (net: number, bits: number): boolean => c.bits >= bits && networkAddress(c.start, bits) === net;
  return inside(0x0a000000, 8) || inside(0xac100000, 12) || inside(0xc0a80000, 16);
}

/** `validateProvisionRange`'s last check: any other network whose subnet overlaps this one. */
function checkOverlap(ctx: StateCtx, cidr: Cidr, self: string | undefined): void {
  if (isRfc1918(cidr)) return;
  const end = broadcastAddress(cidr);
  const overlapping = [...ctx.state.networks.values()]
    .filter((n) => n.uuid !== self)
    .filter((n) => {
      const c = cidrOf(n);
      return c.start <= end && broadcastAddress(c) >= cidr.start;
    })
    .map((n) => usedByParam('subnet', 'network', n.uuid, 'subnet overlaps with another network'))
    .sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
  if (overlapping.length) throw problem(overlapping);
}

const CREATE_SCHEMA: Schema<StateCtx> = {
  required: { name: string, nic_tag: nicTagExists, vlan_id: vlan },
  optional: {
    description: string,
    family: enumOf(['ipv4']),
    subnet,
    provision_end_ip: ipv4,
    provision_start_ip: ipv4,
    fields: fieldsArray,
    gateway,
    internet_nat: bool,
    mtu: networkMtu,
    owner_uuids: uuidArray,
    routes,
    resolvers: ipArray,
    uuid,
  },
  after: [
    (_ctx, raw) => {
      const errs: NapiFieldError[] = [];
      for (const p of ['provision_end_ip', 'provision_start_ip', 'subnet']) if (raw[p] === undefined) errs.push(missingParam(p));
      if (errs.length > 0) throw problem(errs);
    },
    (ctx, _raw, parsed) => {
      const cidr = parsed.subnet as { start: number; bits: number } | undefined;
      if (!cidr || parsed.provision_start_ip === undefined || parsed.provision_end_ip === undefined) return;
      checkRange(ctx, { subnet_start: cidr.start, subnet_bits: cidr.bits, nic_tag: parsed.nic_tag as string }, parsed);
    },
  ],
};

const LIST_SCHEMA: Schema<unknown> = {
  strict: true,
  optional: {
    uuid: uuidPrefix,
    fabric: bool,
    family: enumOf(['ipv4', 'ipv6']),
    limit,
    name: stringOrArray,
    nic_tag: stringOrArray,
    offset,
    owner_uuid: uuid,
    provisionable_by: uuid,
    vlan_id: vlan,
  },
};

function byName(a: NetworkRecord, b: NetworkRecord): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : a.uuid < b.uuid ? -1 : 1;
}

export function listNetworks(ctx: NapiContext, params: Record<string, unknown>): NetworkRecord[] {
  const parsed = validateParams(LIST_SCHEMA, null, params);
  if (parsed.fabric === true || parsed.family === 'ipv6') return [];
  const names = parsed.name === undefined ? undefined : new Set(arrayify(parsed.name).map(String));
  const tags = parsed.nic_tag === undefined ? undefined : new Set(arrayify(parsed.nic_tag).map(String));
  const prefix = typeof parsed.uuid === 'string' ? parsed.uuid : undefined;
  const out = [...ctx.state.networks.values()].filter((n) => {
    if (names && !names.has(n.name)) return false;
    if (tags && !tags.has(n.nic_tag)) return false;
    if (parsed.vlan_id !== undefined && n.vlan_id !== parsed.vlan_id) return false;
    if (prefix !== undefined) {
      if (prefix.endsWith('*') ? !n.uuid.startsWith(prefix.slice(0, -1)) : n.uuid !== prefix) return false;
    }
    if (typeof parsed.owner_uuid === 'string' && !(n.owner_uuids ?? []).includes(parsed.owner_uuid)) return false;
    if (typeof parsed.provisionable_by === 'string' && n.owner_uuids && !n.owner_uuids.includes(parsed.provisionable_by)) return false;
    return true;
  });
  out.sort(byName);
  return page(out, parsed);
}

/** `GET /networks/:uuid`; `fields` selects what to serialize. */
export function getNetwork(ctx: NapiContext, params: Record<string, unknown>): { network: NetworkRecord; fields?: string[] } {
  const parsed = validateParams(
    {
      required: {
        uuid: (_c, name, v) => {
          if (typeof v !== 'string') throw problem(invalidParam(name, 'invalid UUID'));
          return v === 'admin' ? v : uuid(null, name, v);
        },
      },
      optional: { fields: fieldsArray, owner_uuid: uuid, provisionable_by: uuid },
    },
    null,
    params,
  );
  const net = findNetwork(ctx.state, parsed.uuid as string);
  if (!net) throw notFound('network not found');
  const owners = net.owner_uuids;
  const isOwner = (o: string): boolean => !owners || owners.length === 0 || owners.includes(o) || o === ctx.state.adminUuid;
  if (typeof parsed.owner_uuid === 'string' && !isOwner(parsed.owner_uuid)) throw notFound('network not found');
  if (typeof parsed.provisionable_by === 'string' && !isOwner(parsed.provisionable_by)) {
    throw new MockcloudError('Forbidden', 'owner cannot provision on network', { restCode: 'NotAuthorized' });
  }
  return parsed.fields ? { network: net, fields: parsed.fields as string[] } : { network: net };
}

/** Create without persisting or publishing (for the fresh-DC seed). */
export function addNetwork(ctx: StateCtx, params: Record<string, unknown>): NetworkRecord {
  const parsed = validateParams(CREATE_SCHEMA, ctx, params);
  const name = parsed.name as string;
  if ([...ctx.state.networks.values()].some((n) => n.name === name)) {
    throw invalidParamsError([duplicateParam('name')], 'name is in use by another network');
  }
  if (typeof parsed.uuid === 'string' && ctx.state.networks.has(parsed.uuid)) {
    throw invalidParamsError([duplicateParam('uuid')]);
  }
  const cidr = parsed.subnet as { start: number; bits: number };
  const net: NetworkRecord = {
    uuid: (parsed.uuid as string | undefined) ?? newUuid(),
    name,
    nic_tag: parsed.nic_tag as string,
    vlan_id: parsed.vlan_id as number,
    subnet_start: cidr.start,
    subnet_bits: cidr.bits,
    provision_start_ip: parsed.provision_start_ip as number,
    provision_end_ip: parsed.provision_end_ip as number,
    resolvers: (parsed.resolvers as number[] | undefined) ?? [],
    mtu: (parsed.mtu as number | undefined) ?? 1500,
    etag: '',
  };
  if (typeof parsed.gateway === 'number') net.gateway = parsed.gateway;
  if (parsed.routes && Object.keys(parsed.routes).length > 0) net.routes = parsed.routes as Record<string, string>;
  if (Array.isArray(parsed.owner_uuids) && parsed.owner_uuids.length > 0) net.owner_uuids = parsed.owner_uuids as string[];
  if (typeof parsed.description === 'string') net.description = parsed.description;
  net.etag = etagOf(net);
  ctx.state.addNetwork(net);
  return net;
}

export async function createNetwork(ctx: NapiContext, params: Record<string, unknown>): Promise<NetworkRecord> {
  const net = addNetwork(ctx, params);
  await ctx.commit();
  ctx.publish({ changeKind: { resource: 'network', subResources: ['create'] }, changedResourceId: net.uuid, etag: net.etag });
  return net;
}

/** `PUT /networks/:uuid`. */
export async function updateNetwork(ctx: NapiContext, existing: NetworkRecord, params: Record<string, unknown>): Promise<NetworkRecord> {
  const immutable = (field: string, same: (v: unknown) => boolean) => (_c: unknown, name: string, v: unknown) => {
    if (!same(v)) throw problem(invalidParam(name, 'Network updates for this field are not supported'));
    return undefined;
  };
  const schema: Schema<StateCtx> = {
    optional: {
      name: string,
      description: string,
      owner_uuids: uuidArray,
      mtu: networkMtu,
      gateway,
      provision_end_ip: ipv4,
      provision_start_ip: ipv4,
      resolvers: ipArray,
      routes,
      fabric: immutable('fabric', (v) => v === false || v === 'false'),
      family: immutable('family', (v) => v === 'ipv4'),
      nic_tag: immutable('nic_tag', (v) => v === existing.nic_tag),
      subnet: immutable('subnet', (v) => {
        const c = typeof v === 'string' ? parseCidr(v) : undefined;
        return !!c && c.start === existing.subnet_start && c.bits === existing.subnet_bits;
      }),
      vlan_id: immutable('vlan_id', (v) => Number(v) === existing.vlan_id),
    },
    after: [
      (c, _raw, parsed) => {
        const merged = {
          provision_start_ip: parsed.provision_start_ip ?? existing.provision_start_ip,
          provision_end_ip: parsed.provision_end_ip ?? existing.provision_end_ip,
          gateway: parsed.gateway,
          mtu: parsed.mtu,
        };
        checkRange(c, existing, merged, existing.uuid);
      },
    ],
  };
  const parsed = validateParams(schema, ctx, params);
  if (typeof parsed.name === 'string' && parsed.name !== existing.name && [...ctx.state.networks.values()].some((n) => n.name === parsed.name)) {
    throw invalidParamsError([duplicateParam('name')], 'name is in use by another network');
  }
  const net: NetworkRecord = { ...existing };
  const changed: string[] = [];
  if (typeof parsed.name === 'string') net.name = parsed.name;
  if (typeof parsed.description === 'string') net.description = parsed.description;
  if (Array.isArray(parsed.owner_uuids)) {
    if (parsed.owner_uuids.length > 0) net.owner_uuids = parsed.owner_uuids as string[];
    else delete net.owner_uuids;
  }
  if (typeof parsed.mtu === 'number') net.mtu = parsed.mtu;
  if (typeof parsed.provision_start_ip === 'number') net.provision_start_ip = parsed.provision_start_ip;
  if (typeof parsed.provision_end_ip === 'number') net.provision_end_ip = parsed.provision_end_ip;
  if (Object.prototype.hasOwnProperty.call(parsed, 'gateway')) {
    if (typeof parsed.gateway === 'number') net.gateway = parsed.gateway;
    else delete net.gateway;
    changed.push('gateway');
  }
  if (Array.isArray(parsed.resolvers)) {
    net.resolvers = parsed.resolvers as number[];
    changed.push('resolvers');
  }
  if (parsed.routes !== undefined) {
    const r = parsed.routes as Record<string, string>;
    if (Object.keys(r).length > 0) net.routes = r;
    else delete net.routes;
    changed.push('routes');
  }
  net.etag = etagOf(net);
  ctx.state.networks.set(net.uuid, net);
  ctx.state.refreshStaticIps(net);
  await ctx.commit();
  if (changed.length > 0) {
    ctx.publish({ changeKind: { resource: 'network', subResources: changed }, changedResourceId: net.uuid, etag: net.etag });
  }
  return net;
}

export async function deleteNetwork(ctx: NapiContext, existing: NetworkRecord): Promise<void> {
  const onIt = [...ctx.state.nics.values()].filter((n) => n.network_uuid === existing.uuid);
  if (onIt.length > 0) {
    throw inUseError(
      'network must have no NICs provisioned',
      onIt.map((n) => ({ type: 'nic', id: formatMac(n.mac), code: 'UsedBy', message: `In use by nic "${formatMac(n.mac)}"` }) as unknown as NapiFieldError),
    );
  }
  ctx.state.removeNetwork(existing.uuid);
  await ctx.commit();
  ctx.publish({ changeKind: { resource: 'network', subResources: ['delete'] }, changedResourceId: existing.uuid });
}
