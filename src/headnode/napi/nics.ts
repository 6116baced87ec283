/**
 * NICs, as sdc-napi lib/models/nic/{create,update,del,list}.js treat them: the create and
 * update schemas and their cross-checks (network ownership, nic tag / VLAN consistency, an
 * IP inside its network and not held by someone else), address allocation on the NIC's
 * network, generated MACs, one primary NIC per owner, and the changefeed items NAPI
 * publishes for each change.
 *
 * Every function here validates and mutates synchronously (one event-loop turn), so two
 * concurrent requests can never both take the same address or MAC.
 */
import { NIC_ANTI_SPOOF_FLAGS } from '../../common/changefeed/protocol.js';
import { cidrContains, formatIpv4 } from '../../common/ipv4.js';
import { formatMac, randomMacInOui } from './addr.js';
import type { NapiContext } from './context.js';
import {
  duplicateParam,
  invalidParam,
  invalidParamsError,
  missingParam,
  MSG,
  notFound,
  subnetFullError,
  usedByParam,
  type NapiFieldError,
} from './errors.js';
import {
  BELONGS_TO_TYPES,
  BOOL_PARAMS,
  cidrOf,
  etagOf,
  NIC_STATES,
  serializeNic,
  type BelongsToType,
  type NetworkPoolRecord,
  type NetworkRecord,
  type NicRecord,
  type NicState,
} from './model.js';
import { checkPoolParams, takePoolIp } from './nic-pools.js';
import {
  bool,
  enumOf,
  page,
  problem,
  string,
  stringOrArray,
  uuid,
  uuidArray,
  arrayify,
  limit,
  offset,
  validateParams,
  vlan,
  type Schema,
} from './validate.js';
import { ipv4, ipv4Network, mac, nicTag, nicTagsExist, type StateCtx } from './validators.js';

type Parsed = Record<string, unknown>;

const NIC_FIELD_VALIDATORS = {
  allow_dhcp_spoofing: bool,
  allow_ip_spoofing: bool,
  allow_mac_spoofing: bool,
  allow_restricted_traffic: bool,
  allow_unfiltered_promisc: bool,
  check_owner: bool,
  cn_uuid: uuid,
  ip: ipv4,
  model: string,
  network_uuid: ipv4Network,
  nic_tag: nicTag,
  nic_tags_available: nicTagsExist,
  nic_tags_provided: nicTagsExist,
  primary: bool,
  reserved: bool,
  state: enumOf(NIC_STATES),
  underlay: bool,
  vlan_id: vlan,
};

interface NicCtx extends StateCtx {
  create: boolean;
  existing?: NicRecord;
}

const CREATE_SCHEMA: Schema<NicCtx> = {
  required: {
    belongs_to_uuid: uuid,
    belongs_to_type: enumOf(BELONGS_TO_TYPES),
    owner_uuid: uuid,
  },
  optional: { ...NIC_FIELD_VALIDATORS, mac },
  after: [validateNetworkParams, validateUnderlayServer],
};

const UPDATE_SCHEMA: Schema<NicCtx> = {
  required: { mac },
  optional: {
    ...NIC_FIELD_VALIDATORS,
    belongs_to_type: enumOf(BELONGS_TO_TYPES),
    belongs_to_uuid: uuid,
    owner_uuid: uuid,
  },
  after: [copyOldNetwork, validateNetworkParams, validateUnderlayServer],
};

const LIST_SCHEMA: Schema<unknown> = {
  strict: true,
  optional: {
    allow_dhcp_spoofing: bool,
    allow_ip_spoofing: bool,
    allow_mac_spoofing: bool,
    allow_restricted_traffic: bool,
    allow_unfiltered_promisc: bool,
    limit,
    offset,
    owner_uuid: uuidArray,
    cn_uuid: uuidArray,
    belongs_to_uuid: uuidArray,
    belongs_to_type: stringOrArray,
    nic_tag: stringOrArray,
    nic_tags_provided: stringOrArray,
    network_uuid: uuidArray,
    state: string,
    underlay: bool,
  },
};

/** Fields a PUT may change (UPDATE_PARAMS, minus the network, handled with the IP). */
const UPDATABLE = [
  'allow_dhcp_spoofing',
  'allow_ip_spoofing',
  'allow_mac_spoofing',
  'allow_restricted_traffic',
  'allow_unfiltered_promisc',
  'belongs_to_type',
  'belongs_to_uuid',
  'cn_uuid',
  'owner_uuid',
  'model',
  'nic_tag',
  'nic_tags_provided',
  'primary',
  'state',
  'underlay',
] as const;

/** NIC fields whose presence in a PUT is announced on the changefeed. */
const CHANGEFEED_PARAMS = [...NIC_ANTI_SPOOF_FLAGS, 'primary', 'state'];

const MAC_RETRIES = 50;

// --- cross-field checks (validateNetworkParams and friends)

function isOwner(ctx: StateCtx, net: NetworkRecord, owner: string): boolean {
  if (!net.owner_uuids || net.owner_uuids.length === 0) return true;
  return net.owner_uuids.includes(owner) || owner === ctx.state.adminUuid;
}

/** `checkNetwork`: owner allowed, and nic_tag / vlan_id agree with the network's. */
function checkNetwork(ctx: StateCtx, parsed: Parsed, field: string, net: NetworkRecord): NapiFieldError | undefined {
  const checkOwner = parsed.check_owner === undefined || parsed.check_owner === true;
  if (typeof parsed.owner_uuid === 'string' && checkOwner && !isOwner(ctx, net, parsed.owner_uuid)) {
    return invalidParam('owner_uuid', MSG.ownerMatch);
  }
  if (parsed.nic_tag === undefined) parsed.nic_tag = net.nic_tag;
  else if (parsed.nic_tag !== net.nic_tag) {
    return invalidParam(field, `The nic_tag of all specified IPv4 and IPv6 networks must match (have "${String(parsed.nic_tag)}" and "${net.nic_tag}")`);
  }
  if (parsed.vlan_id === undefined) parsed.vlan_id = net.vlan_id;
  else if (parsed.vlan_id !== net.vlan_id) {
    return invalidParam(field, `The vlan_id of all specified IPv4 and IPv6 networks must match (have ${String(parsed.vlan_id)} and ${net.vlan_id})`);
  }
  return undefined;
}

/** The IP must be inside the network and, on create, not held by another owner. */
function checkIpOnNetwork(ctx: NicCtx, field: string, net: NetworkRecord, ip: number): void {
  if (!cidrContains(cidrOf(net), ip)) {
    throw problem(invalidParam(field, `IP address ${formatIpv4(ip)} is outside the subnet for given network ${net.uuid}`));
  }
  const rec = ctx.state.getIp(net.uuid, ip);
  if (ctx.create && !ctx.state.isProvisionable(rec)) {
    const type = rec?.belongs_to_type ?? '';
    const id = rec?.belongs_to_uuid ?? '';
    throw problem(usedByParam(field, type, id, `IP in use by ${type} "${id}"`));
  }
}

function validateNetworkParams(ctx: NicCtx, _raw: Parsed, parsed: Parsed): void {
  if (parsed.network_pool) {
    checkPoolParams(ctx, parsed, parsed.network_pool as NetworkPoolRecord);
    return;
  }
  const net = parsed.network as NetworkRecord | undefined;
  if (net) {
    const err = checkNetwork(ctx, parsed, 'network_uuid', net);
    if (err) throw problem(err);
  }
  if (parsed.ip === undefined) return;
  const ip = parsed.ip as number;
  if (net) {
    checkIpOnNetwork(ctx, 'ip', net, ip);
    return;
  }
  // An IP without a network: nic_tag and vlan_id say which network holds it.
  const errs: NapiFieldError[] = [];
  for (const p of ['nic_tag', 'vlan_id']) if (parsed[p] === undefined) errs.push(missingParam(p, MSG.ipNoVlanTag));
  if (errs.length > 0) throw problem(errs);
  const tag = parsed.nic_tag as string;
  const vlanId = parsed.vlan_id as number;
  const containing = [...ctx.state.networks.values()].filter(
    (n) => n.nic_tag === tag && n.vlan_id === vlanId && cidrContains(cidrOf(n), ip),
  );
  if (containing.length === 0) {
    throw problem(invalidParam('ip', `No networks matching this nic_tag ("${tag}") and vlan_id (${vlanId}) contained the IP address ${formatIpv4(ip)}`));
  }
  if (containing.length > 1) {
    const uuids = containing.map((n) => n.uuid).sort().join(', ');
    throw problem(invalidParam('ip', `Multiple (overlapping) networks (${uuids}) matching this nic_tag and vlan_id contain the IP address ${formatIpv4(ip)}`));
  }
  const found = containing[0]!;
  const err = checkNetwork(ctx, parsed, 'ip', found);
  if (err) throw problem(err);
  checkIpOnNetwork(ctx, 'ip', found, ip);
  parsed.network = found;
  parsed.network_uuid = found.uuid;
}

function validateUnderlayServer(ctx: NicCtx, _raw: Parsed, parsed: Parsed): void {
  const type = (parsed.belongs_to_type ?? ctx.existing?.belongs_to_type) as string | undefined;
  if (parsed.underlay === true && type !== 'server') {
    throw problem(invalidParam('underlay', 'Only server NICs can be underlay NICs'));
  }
}

/** Update: unless the PUT names a network, the NIC stays on its current one. */
function copyOldNetwork(ctx: NicCtx, _raw: Parsed, parsed: Parsed): void {
  const old = ctx.existing;
  if (!old || parsed.network !== undefined) return;
  if (old.network_uuid && old.ip !== undefined) {
    const net = ctx.state.networks.get(old.network_uuid);
    if (net) {
      parsed.network = net;
      parsed.network_uuid = net.uuid;
    }
  }
}

// --- operations

export function nicWire(ctx: NapiContext, nic: NicRecord): Record<string, unknown> {
  const net = nic.network_uuid ? ctx.state.networks.get(nic.network_uuid) : undefined;
  return serializeNic(nic, net);
}

export function getNic(ctx: NapiContext, macParam: unknown): NicRecord {
  const parsed = validateParams({ required: { mac } }, ctx, { mac: macParam });
  const nic = ctx.state.nics.get(parsed.mac as number);
  if (!nic) throw notFound('nic not found');
  return nic;
}

function pickMac(ctx: NapiContext): number {
  for (let i = 0; i < MAC_RETRIES; i++) {
    const m = randomMacInOui(ctx.macOui);
    if (!ctx.state.nics.has(m)) return m;
  }
  throw new Error('no more free MAC addresses');
}

/** Allocate `ip` (or the next free address) on `net` for the NIC; 507 when the range is full. */
function takeIp(ctx: NapiContext, net: NetworkRecord, ip: number | undefined): number {
  if (ip !== undefined) return ip;
  const next = ctx.state.nextFreeIp(net);
  if (next === undefined) throw subnetFullError(net.uuid);
  return next;
}

/** Only one primary NIC per owner: the others lose the flag (and get a new etag). */
function demoteOtherPrimaries(ctx: NapiContext, nic: NicRecord): void {
  if (!nic.primary) return;
  for (const other of ctx.state.nics.values()) {
    if (other !== nic && other.primary && other.belongs_to_uuid === nic.belongs_to_uuid) {
      other.primary = false;
      other.etag = etagOf(other);
      ctx.state.nics.set(other.mac, other); // changed in place: journal it too
    }
  }
}

function applyOptional(nic: NicRecord, parsed: Parsed): void {
  if (typeof parsed.cn_uuid === 'string') nic.cn_uuid = parsed.cn_uuid;
  if (typeof parsed.model === 'string') nic.model = parsed.model;
  if (typeof parsed.nic_tag === 'string') nic.nic_tag = parsed.nic_tag;
  if (Array.isArray(parsed.nic_tags_provided)) {
    if (parsed.nic_tags_provided.length > 0) nic.nic_tags_provided = parsed.nic_tags_provided as string[];
    else delete nic.nic_tags_provided;
  }
  for (const p of BOOL_PARAMS) {
    if (parsed[p] === true) nic[p] = true;
    else if (parsed[p] === false) delete nic[p];
  }
}

/** `POST /nics` and `POST /networks/:network_uuid/nics`. */
export async function createNic(ctx: NapiContext, params: Parsed): Promise<NicRecord> {
  const parsed = validateParams(CREATE_SCHEMA, { state: ctx.state, create: true }, params);
  const macNum = parsed.mac !== undefined ? (parsed.mac as number) : pickMac(ctx);
  if (ctx.state.nics.has(macNum)) throw invalidParamsError([duplicateParam('mac')]);
  const now = Date.now();
  const nic: NicRecord = {
    mac: macNum,
    owner_uuid: parsed.owner_uuid as string,
    belongs_to_uuid: parsed.belongs_to_uuid as string,
    belongs_to_type: parsed.belongs_to_type as BelongsToType,
    primary: parsed.primary === true,
    state: (parsed.state as NicState | undefined) ?? 'provisioning',
    created_timestamp: now,
    modified_timestamp: now,
    etag: '',
  };
  let net = parsed.network as NetworkRecord | undefined;
  if (parsed.network_pool) {
    const taken = takePoolIp(ctx, parsed.network_pool as NetworkPoolRecord, parsed.pool_networks as NetworkRecord[]);
    net = taken.network;
    nic.ip = taken.ip;
    nic.network_uuid = net.uuid;
    parsed.nic_tag = net.nic_tag;
  } else if (net) {
    nic.ip = takeIp(ctx, net, parsed.ip as number | undefined);
    nic.network_uuid = net.uuid;
  }
  applyOptional(nic, parsed);
  nic.etag = etagOf(nic);

  ctx.state.nics.set(nic.mac, nic);
  if (net && nic.ip !== undefined) ctx.state.assignIp(net.uuid, nic.ip, nic, parsed.reserved === true ? true : undefined);
  demoteOtherPrimaries(ctx, nic);
  await ctx.commit();
  ctx.publish({
    changeKind: { resource: 'nic', subResources: ['create'] },
    changedResourceId: formatMac(nic.mac),
    belongs_to_uuid: nic.belongs_to_uuid,
    cn_uuid: nic.cn_uuid,
    etag: nic.etag,
  });
  return nic;
}

/** `PUT /nics/:mac` (the caller has checked existence and If-Match). */
export async function updateNic(ctx: NapiContext, existing: NicRecord, params: Parsed): Promise<NicRecord> {
  const parsed = validateParams(UPDATE_SCHEMA, { state: ctx.state, create: false, existing }, params);
  const updated: NicRecord = { ...existing };
  for (const p of UPDATABLE) {
    if (parsed[p] === undefined) continue;
    (updated as unknown as Record<string, unknown>)[p] = parsed[p];
  }
  applyOptional(updated, parsed);
  updated.modified_timestamp = Date.now();

  // The address: a new one named, a new network (allocate there), or the old one kept.
  const net = parsed.network as NetworkRecord | undefined;
  const oldNet = existing.network_uuid;
  const oldIp = existing.ip;
  let newIp: number | undefined = oldIp;
  if (net) {
    const sameNet = net.uuid === oldNet && oldIp !== undefined;
    if (parsed.ip !== undefined) newIp = parsed.ip as number;
    else if (!sameNet) newIp = takeIp(ctx, net, undefined);
    const changed = newIp !== oldIp || net.uuid !== oldNet;
    // A new address must be provisionable, whoever holds it (update.js prepareUpdate).
    if (changed && !ctx.state.isProvisionable(ctx.state.getIp(net.uuid, newIp!))) {
      const rec = ctx.state.getIp(net.uuid, newIp!)!;
      const owner = rec.belongs_to_uuid ?? '';
      throw invalidParamsError([
        usedByParam('ip', rec.belongs_to_type ?? '', owner, `IP in use by ${rec.belongs_to_type ?? ''} "${owner}"`),
      ]);
    }
    updated.ip = newIp;
    updated.network_uuid = net.uuid;
  }
  updated.etag = etagOf(updated);

  // Commit the change to memory in one go.
  if (oldIp !== undefined && oldNet && (updated.ip !== oldIp || updated.network_uuid !== oldNet)) {
    const rec = ctx.state.getIp(oldNet, oldIp);
    if (rec?.belongs_to_uuid === existing.belongs_to_uuid) ctx.state.unassignIp(oldNet, oldIp, Date.now());
  }
  if (updated.ip !== undefined && updated.network_uuid) {
    ctx.state.assignIp(updated.network_uuid, updated.ip, updated, parsed.reserved === true ? true : undefined);
  }
  ctx.state.nics.set(updated.mac, updated);
  demoteOtherPrimaries(ctx, updated);
  await ctx.commit();

  const changed = CHANGEFEED_PARAMS.filter((p) => Object.prototype.hasOwnProperty.call(params, p));
  if (changed.length > 0) {
    ctx.publish({
      changeKind: { resource: 'nic', subResources: changed },
      changedResourceId: formatMac(updated.mac),
      belongs_to_uuid: updated.belongs_to_uuid,
      cn_uuid: updated.cn_uuid,
      etag: updated.etag,
    });
  }
  return updated;
}

/** `DELETE /nics/:mac`: the address goes back unless someone else took it over. */
export async function deleteNic(ctx: NapiContext, existing: NicRecord): Promise<void> {
  ctx.state.nics.delete(existing.mac);
  if (existing.ip !== undefined && existing.network_uuid) {
    const rec = ctx.state.getIp(existing.network_uuid, existing.ip);
    if (rec?.belongs_to_uuid === existing.belongs_to_uuid) {
      ctx.state.unassignIp(existing.network_uuid, existing.ip, Date.now());
    } else {
      ctx.log.warn({ mac: formatMac(existing.mac), ip: formatIpv4(existing.ip) }, 'nic: delete: IP and NIC belongs_to_uuid do not match');
    }
  }
  await ctx.commit();
  ctx.publish({
    changeKind: { resource: 'nic', subResources: ['delete'] },
    changedResourceId: formatMac(existing.mac),
    belongs_to_uuid: existing.belongs_to_uuid,
    cn_uuid: existing.cn_uuid,
  });
}

/** `GET /nics`: filters are ANDed, the values of one filter ORed; sorted by MAC. */
export function listNics(ctx: NapiContext, params: Parsed): NicRecord[] {
  const parsed = validateParams(LIST_SCHEMA, null, params);
  const sets = new Map<string, Set<string>>();
  for (const p of ['owner_uuid', 'cn_uuid', 'belongs_to_uuid', 'network_uuid', 'belongs_to_type', 'nic_tag'] as const) {
    if (parsed[p] === undefined) continue;
    const values = arrayify(parsed[p]).map(String);
    if (values.length > 0) sets.set(p, new Set(values));
  }
  const provided = parsed.nic_tags_provided === undefined ? [] : arrayify(parsed.nic_tags_provided).map(String);
  const out: NicRecord[] = [];
  for (const nic of ctx.state.nics.values()) {
    let ok = true;
    for (const [p, values] of sets) {
      const v = (nic as unknown as Record<string, unknown>)[p];
      if (typeof v !== 'string' || !values.has(v)) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (typeof parsed.state === 'string' && nic.state !== parsed.state) continue;
    if (provided.length > 0 && !provided.some((t) => nic.nic_tags_provided?.includes(t))) continue;
    if (BOOL_PARAMS.some((p) => parsed[p] !== undefined && (nic[p] ?? undefined) !== parsed[p])) continue;
    out.push(nic);
  }
  out.sort((a, b) => a.mac - b.mac);
  return page(out, parsed);
}
