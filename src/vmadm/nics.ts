/**
 * NIC normalisation as vmadm does it: only known NIC keys, `ip`/`ips` and
 * `gateway`/`gateways` kept consistent, a MAC generated when absent, `interface` names
 * netN (ethN for lx, the brand's interface_prefix), the HVM `nic_driver` as the default
 * model, false flags dropped, exactly one primary. Also the add/update/remove rules of
 * `vmadm update`, with vmadm's choice of a new primary when the primary goes away.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { isRfc1918, leadingOnes, parseIpv4 } from '../common/ipv4.js';
import type { VmNic } from './types.js';
import { invalidValue, invalidProperty } from './errors.js';
import { BRAND_FEATURES, NIC_FLAGS, NIC_PROPERTIES } from './properties.js';
import { checkValue, isPlainObject } from './validate.js';

const MAC_RE = /^[0-9a-f]{1,2}(:[0-9a-f]{1,2}){5}$/i;

/** "0:1:2:a:b:c" → "00:01:02:0a:0b:0c" (SmartOS sometimes drops leading zeros). */
export function normalizeMac(mac: string): string {
  return mac
    .toLowerCase()
    .split(':')
    .map((o) => o.padStart(2, '0'))
    .join(':');
}

/** A random locally administered unicast MAC, like vmadm's generator. */
export function generateMac(): string {
  const b = randomBytes(6);
  b[0] = (((b[0]! % 15) + 1) << 4) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/** The MAC vmadm uses for a VRRP NIC. */
export function vrrpMac(vrid: number): string {
  return `00:00:5e:00:01:${vrid.toString(16).padStart(2, '0')}`;
}

/** The prefix length vmadm writes into `ips` for a netmask: its leading one bits. */
function netmaskBits(netmask: string): number | undefined {
  return net.isIPv4(netmask) ? leadingOnes(parseIpv4(netmask)!) : undefined;
}

export function isPrivateIPv4(ip: unknown): boolean {
  return typeof ip === 'string' && net.isIPv4(ip) && isRfc1918({ start: parseIpv4(ip)!, bits: 32 });
}

/** The addresses of a NIC without prefix lengths (from `ips`, else `ip`). */
function nicAddresses(nic: VmNic): string[] {
  if (Array.isArray(nic.ips) && nic.ips.length > 0) return nic.ips.map((c) => String(c).split('/')[0]!);
  return typeof nic.ip === 'string' ? [nic.ip] : [];
}

/**
 * Validate and normalise one NIC of a payload (`nics`, `add_nics` or `update_nics`).
 * `field` names it in errors, e.g. "nics.1".
 */
export function normalizeNic(
  raw: unknown,
  field: string,
  opts: { forUpdate: boolean; patch?: boolean },
): VmNic {
  if (!isPlainObject(raw)) throw invalidValue(field, `${field} must be an object`);
  const nic: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const type = NIC_PROPERTIES[key];
    if (type === undefined) {
      throw invalidProperty(opts.forUpdate ? 'update' : 'create', `${field}.${key}`, 'not a NIC property');
    }
    nic[key] = checkValue(`${field}.${key}`, type, value);
  }
  if (typeof nic.mac === 'string') {
    if (!MAC_RE.test(nic.mac)) throw invalidValue(`${field}.mac`, `invalid MAC address ${JSON.stringify(nic.mac)}`);
    nic.mac = normalizeMac(nic.mac);
  }
  if (typeof nic.ip === 'string' && nic.ip !== 'dhcp' && nic.ip !== 'addrconf' && !net.isIP(nic.ip)) {
    throw invalidValue(`${field}.ip`, `invalid IP address ${JSON.stringify(nic.ip)}`);
  }
  if (typeof nic.netmask === 'string' && netmaskBits(nic.netmask) === undefined) {
    throw invalidValue(`${field}.netmask`, `invalid netmask ${JSON.stringify(nic.netmask)}`);
  }
  // A patch is reconciled after it is merged into the NIC it changes.
  if (!opts.patch) reconcileAddresses(nic as VmNic, field);
  return nic as VmNic;
}

/** Keep ip/ips and gateway/gateways consistent, the way vmadm reports them. */
export function reconcileAddresses(nic: VmNic, field: string): void {
  if (typeof nic.ip === 'string' && nic.ips === undefined) {
    if (nic.ip === 'dhcp' || nic.ip === 'addrconf') {
      nic.ips = [nic.ip];
    } else if (net.isIPv6(nic.ip)) {
      nic.ips = [nic.ip.includes('/') ? nic.ip : `${nic.ip}/64`];
    } else {
      const bits = typeof nic.netmask === 'string' ? netmaskBits(nic.netmask) : undefined;
      if (bits === undefined) throw invalidValue(`${field}.netmask`, 'netmask is required with ip');
      nic.ips = [`${nic.ip}/${bits}`];
    }
  } else if (Array.isArray(nic.ips) && nic.ips.length > 0 && nic.ip === undefined) {
    nic.ip = String(nic.ips[0]).split('/')[0];
  }
  if (typeof nic.gateway === 'string' && nic.gateways === undefined) {
    nic.gateways = [nic.gateway];
  } else if (Array.isArray(nic.gateways) && nic.gateways.length > 0 && nic.gateway === undefined) {
    nic.gateway = String(nic.gateways[0]);
  }
}

function dropFalseFlags(nic: VmNic): void {
  for (const flag of NIC_FLAGS) if (nic[flag] === false) delete nic[flag];
}

/** What the brand's VMs are told about their NICs (the brand and, for HVM, nic_driver). */
export interface NicContext {
  brand: string;
  nicDriver?: string | undefined;
  /** vmadm's warnings (a MAC to remove that the VM does not have). */
  warn?: ((message: string) => void) | undefined;
}

function nextInterfaceName(taken: Set<string>, prefix: string): string {
  for (let i = 0; i < 1000; i++) {
    const name = `${prefix}${i}`;
    if (!taken.has(name)) return name;
  }
  throw invalidValue('nics', 'too many NICs');
}

/** Fill in what vmadm fills in for new NICs: MAC, interface name. */
function completeNewNics(existing: readonly VmNic[], added: VmNic[], ctx: NicContext): void {
  const prefix = BRAND_FEATURES[ctx.brand]?.interfacePrefix ?? 'net';
  const macs = new Set(existing.map((n) => n.mac));
  const names = new Set(existing.map((n) => n.interface).filter((n): n is string => typeof n === 'string'));
  for (const nic of added) {
    if (nic.mac === undefined) {
      let mac = typeof nic.vrrp_vrid === 'number' ? vrrpMac(nic.vrrp_vrid) : generateMac();
      for (let tries = 0; macs.has(mac) && tries < 16; tries++) mac = generateMac();
      nic.mac = mac;
    }
    if (macs.has(nic.mac)) throw invalidValue('nics.*.mac', `duplicate MAC address ${nic.mac}`);
    macs.add(nic.mac);
    if (nic.interface === undefined) nic.interface = nextInterfaceName(names, prefix);
    if (nic.model === undefined && ctx.nicDriver !== undefined) nic.model = ctx.nicDriver;
    names.add(nic.interface);
    dropFalseFlags(nic);
  }
}

/**
 * vmadm's choice of a primary when none is marked: prefer a NIC with a public address,
 * then one with a private address, then the first NIC.
 */
function choosePrimary(nics: VmNic[]): void {
  if (nics.length === 0 || nics.some((n) => n.primary === true)) return;
  const withAddr = nics.filter((n) => nicAddresses(n).some((a) => net.isIP(a)));
  const pub = withAddr.find((n) => nicAddresses(n).some((a) => net.isIPv4(a) && !isPrivateIPv4(a)));
  const priv = withAddr.find((n) => nicAddresses(n).some((a) => isPrivateIPv4(a)));
  (pub ?? priv ?? nics[0]!).primary = true;
}

function assertOnePrimary(nics: readonly VmNic[], field: string): void {
  if (nics.filter((n) => n.primary === true).length > 1) {
    throw invalidValue(field, 'only one NIC can be primary');
  }
}

/** The `nics` of a create payload, normalised. */
export function createNics(raw: unknown, ctx: NicContext): VmNic[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw invalidValue('nics', 'nics must be an array of objects');
  const nics = raw.map((n, i) => normalizeNic(n, `nics.${i}`, { forUpdate: false }));
  assertOnePrimary(nics, 'nics');
  completeNewNics([], nics, ctx);
  // On create, vmadm marks the first NIC primary when none is.
  if (nics.length > 0 && !nics.some((n) => n.primary === true)) nics[0]!.primary = true;
  return nics;
}

export interface NicUpdate {
  add?: unknown;
  update?: unknown;
  remove?: unknown;
}

/**
 * Apply add_nics / update_nics / remove_nics to a VM's NICs; returns the new list. Unknown
 * MACs in update_nics/remove_nics are errors (vmadm refuses them too).
 */
export function applyNicUpdate(current: readonly VmNic[], req: NicUpdate, ctx: NicContext): VmNic[] {
  let nics = current.map((n) => ({ ...n }));
  const hadPrimary = nics.some((n) => n.primary === true);

  if (req.remove !== undefined) {
    const macs = checkValue('remove_nics', 'list', req.remove) as string[];
    for (const raw of macs) {
      const mac = normalizeMac(String(raw));
      // VM.js update: "There is no NIC with the MAC address <mac>. Skipping..." (a warning, not
      // an error: net-agent may have removed it already, as NAPI deleted it first).
      if (!nics.some((n) => n.mac === mac)) {
        ctx.warn?.(`There is no NIC with the MAC address ${mac}. Skipping...`);
        continue;
      }
      nics = nics.filter((n) => n.mac !== mac);
    }
  }

  let newPrimary = false;
  if (req.update !== undefined) {
    const updates = checkValue('update_nics', 'object-array', req.update) as unknown[];
    updates.forEach((raw, i) => {
      const upd = normalizeNicPatch(raw, `update_nics.${i}`);
      const target = nics.find((n) => n.mac === upd.mac);
      if (!target) throw invalidValue(`update_nics.${i}.mac`, `VM has no NIC with MAC ${String(upd.mac)}`);
      for (const [k, v] of Object.entries(upd)) {
        if (NIC_FLAGS.includes(k) && v === false) delete target[k];
        else target[k] = v;
      }
      // A new ip replaces the old ips (and the other way round); then derive the pair.
      if ('ip' in upd && !('ips' in upd)) delete target.ips;
      if ('ips' in upd && !('ip' in upd)) delete target.ip;
      if ('gateway' in upd && !('gateways' in upd)) delete target.gateways;
      if ('gateways' in upd && !('gateway' in upd)) delete target.gateway;
      reconcileAddresses(target, `update_nics.${i}`);
      if (upd.primary === true) {
        if (newPrimary) throw invalidValue('update_nics', 'only one NIC can be primary');
        newPrimary = true;
        for (const n of nics) if (n !== target) delete n.primary;
      }
    });
  }

  if (req.add !== undefined) {
    const added = (checkValue('add_nics', 'object-array', req.add) as unknown[]).map((n, i) =>
      normalizeNic(n, `add_nics.${i}`, { forUpdate: true }),
    );
    assertOnePrimary(added, 'add_nics');
    completeNewNics(nics, added, ctx);
    if (added.some((n) => n.primary === true)) {
      if (newPrimary) throw invalidValue('add_nics', 'only one NIC can be primary');
      for (const n of nics) delete n.primary;
    }
    nics = nics.concat(added);
  }

  // The primary went away (or there was none and NICs were added): vmadm picks one.
  if (hadPrimary || req.add !== undefined) choosePrimary(nics);
  return nics;
}

/** An update_nics entry: a MAC plus the keys to change; ip/ips kept consistent. */
function normalizeNicPatch(raw: unknown, field: string): VmNic {
  if (!isPlainObject(raw)) throw invalidValue(field, `${field} must be an object`);
  if (typeof raw.mac !== 'string') throw invalidValue(`${field}.mac`, 'update_nics entries need a mac');
  return normalizeNic(raw, field, { forUpdate: true, patch: true });
}
