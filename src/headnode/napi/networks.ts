/**
 * Networks and their IP tables (sdc-napi lib/models/network.js, lib/models/ip): IPv4
 * networks on an existing nic tag with a subnet, provision range, gateway, resolvers and
 * routes; unique names; the admin network reachable by the name `admin`; immutable
 * subnet / nic_tag / vlan_id; no delete while NICs use it. Changes to gateway, resolvers
 * and routes go out on the changefeed, which net-agent turns into VM updates.
 */
import { newUuid } from '../../common/uuid.js';
import { MockcloudError } from '../../common/errors.js';
import { formatMac, napiSubnet } from './addr.js';
import type { NapiContext } from './context.js';
import { duplicateParam, inUseError, invalidParam, invalidParamsError, notFound, type NapiFieldError } from './errors.js';
import { etagOf, type NetworkRecord } from './model.js';
import {
  checkFabricOwner,
  checkMtu,
  checkRange,
  checkSubnetAlloc,
  fieldsArray,
  gateway,
  ipArray,
  nameStr,
  networkMtu,
  nicTagExists,
  routes,
  subnet,
  subnetPrefix,
  uuidPrefix,
  vxlan,
} from './network-checks.js';
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

export { uuidPrefix };

const CREATE_SCHEMA: Schema<StateCtx> = {
  required: { name: string, nic_tag: nicTagExists, vlan_id: vlan },
  optional: {
    description: string,
    fabric: bool,
    subnet_alloc: bool,
    family: enumOf(['ipv4']),
    subnet_prefix: subnetPrefix,
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
    vnet_id: vxlan,
  },
  after: [
    (_ctx, _raw, parsed) => checkFabricOwner(parsed),
    (_ctx, raw, parsed) => checkSubnetAlloc(raw, parsed),
    (ctx, _raw, parsed) => {
      const cidr = parsed.subnet as { start: number; bits: number };
      const net = {
        subnet_start: cidr.start,
        subnet_bits: cidr.bits,
        nic_tag: parsed.nic_tag as string,
        fabric: parsed.fabric === true,
        ...(typeof parsed.vnet_id === 'number' ? { vnet_id: parsed.vnet_id } : {}),
      };
      checkRange(ctx, net, parsed);
    },
    (ctx, _raw, parsed) => checkMtu(ctx, parsed.nic_tag as string, parsed),
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
  if (parsed.family === 'ipv6') return [];
  // listNetworks matches names by nameStr: `global:<name>`, or any owner's fabric of that name
  // with `fabric=true` (an owner's own with provisionable_by).
  const names = parsed.name === undefined ? undefined : new Set(arrayify(parsed.name).map(String));
  const nameMatches = (n: NetworkRecord): boolean => {
    if (!names?.has(n.name)) return false;
    if (parsed.fabric !== true) return nameStr(n) === `global:${n.name}` || (typeof parsed.provisionable_by === 'string' && nameStr(n) === `${parsed.provisionable_by}:${n.name}`);
    return typeof parsed.provisionable_by === 'string' ? nameStr(n) === `${parsed.provisionable_by}:${n.name}` : true;
  };
  const tags = parsed.nic_tag === undefined ? undefined : new Set(arrayify(parsed.nic_tag).map(String));
  const prefix = typeof parsed.uuid === 'string' ? parsed.uuid : undefined;
  const out = [...ctx.state.networks.values()].filter((n) => {
    if (names && !nameMatches(n)) return false;
    if (parsed.fabric !== undefined && (n.fabric === true) !== parsed.fabric) return false;
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
  const fabric = parsed.fabric === true;
  const owners = Array.isArray(parsed.owner_uuids) && parsed.owner_uuids.length > 0 ? (parsed.owner_uuids as string[]) : undefined;
  const key = nameStr({ name, fabric, ...(owners ? { owner_uuids: owners } : {}) });
  if ([...ctx.state.networks.values()].some((n) => nameStr(n) === key)) {
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
  if (owners) net.owner_uuids = owners;
  if (fabric) {
    // createNetworkObject and the Network constructor: a NAT-ed fabric gets a gateway; the
    // gateway is not provisioned unless said; internet_nat defaults to true.
    net.fabric = true;
    net.internet_nat = typeof parsed.internet_nat === 'boolean' ? parsed.internet_nat : true;
    if (parsed.internet_nat === true && net.gateway === undefined) net.gateway = net.provision_start_ip;
    if (net.gateway !== undefined) net.gateway_provisioned = false;
    if (typeof parsed.vnet_id === 'number') net.vnet_id = parsed.vnet_id;
  }
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
  // validateImmutableFields: each compared with the network's own value (internet_nat is not
  // one of the Network's properties, so any value differs); a fabric's gateway and owners too.
  const immutable = (field: string, same: (v: unknown) => boolean) => (_c: unknown, name: string, v: unknown) => {
    if (!same(v)) throw problem(invalidParam(name, 'Network updates for this field are not supported'));
    return undefined;
  };
  const fabricFixed = <T>(check: (c: StateCtx, name: string, v: unknown) => T) => (c: StateCtx, name: string, v: unknown): T => {
    const parsedValue = check(c, name, v);
    if (existing.fabric) throw problem(invalidParam(name, 'Network updates for this field are not supported on fabrics'));
    return parsedValue;
  };
  const schema: Schema<StateCtx> = {
    optional: {
      name: string,
      description: string,
      owner_uuids: fabricFixed(uuidArray),
      mtu: networkMtu,
      gateway: fabricFixed(gateway),
      provision_end_ip: ipv4,
      provision_start_ip: ipv4,
      resolvers: ipArray,
      routes,
      fabric: immutable('fabric', (v) => bool(null, 'fabric', v) === (existing.fabric === true)),
      gateway_provisioned: immutable('gateway_provisioned', (v) => bool(null, 'gateway_provisioned', v) === existing.gateway_provisioned),
      internet_nat: immutable('internet_nat', (v) => (bool(null, 'internet_nat', v), false)),
      vnet_id: immutable('vnet_id', (v) => vxlan(null, 'vnet_id', v) === existing.vnet_id),
      family: immutable('family', (v) => v === 'ipv4'),
      nic_tag: immutable('nic_tag', (v) => v === existing.nic_tag),
      subnet: immutable('subnet', (v) => {
        const c = typeof v === 'string' ? napiSubnet(v) : undefined;
        return !!c && c.start === existing.subnet_start && c.bits === existing.subnet_bits;
      }),
      vlan_id: immutable('vlan_id', (v) => Number(v) === existing.vlan_id),
    },
    after: [
      // validateProvisionRangeUpdate: only when the range or gateway changes, and (through
      // /networks) as for a non-fabric network.
      (c, _raw, parsed) => {
        if (!['provision_start_ip', 'provision_end_ip', 'gateway'].some((k) => Object.prototype.hasOwnProperty.call(parsed, k))) return;
        const merged = {
          provision_start_ip: parsed.provision_start_ip ?? existing.provision_start_ip,
          provision_end_ip: parsed.provision_end_ip ?? existing.provision_end_ip,
          gateway: parsed.gateway,
        };
        const { fabric: _fabric, ...shape } = existing;
        checkRange(c, shape, merged, existing.uuid);
      },
      (c, _raw, parsed) => checkMtu(c, existing.nic_tag, parsed),
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
