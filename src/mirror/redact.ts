/**
 * Redaction of a capture (`mirror capture --redact`, the default; docs/mirror.md lists what is
 * replaced and what is kept). Every replacement is a keyed hash (HMAC-SHA256 under a secret of
 * the capture, never written) of the original, so one value maps to one replacement everywhere
 * in the file (an owner's UUID in its VMs, NICs, networks and images; a hostname in CNAPI's
 * record and in sysinfo) and two values never share one (up to 2^-48 per pair):
 *
 * - customer_metadata values, tags' string values, internal_metadata string values: "redacted";
 * - VM aliases and hostnames: `vm-<12 hex>`; CN hostnames: `cn-<12 hex>`;
 * - owner UUIDs (VMs, NICs, networks, pools, images, packages): a UUID from the hash; the DC's
 *   admin UUID is kept (it is the operator's, and the loading DC's admin owns the same things);
 * - IPv4 addresses in customer networks (every network but the admin one): each such subnet is
 *   moved to a block of the same size in 10.128.0.0/9 (the first free one, in capture order),
 *   keeping each address's offset in it. So NICs, gateways, provision ranges, resolvers and
 *   routes that were in one subnet stay in one subnet, in the same places, and agree with each
 *   other; addresses outside every captured customer subnet (the admin network, public
 *   resolvers) are kept.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { repeatableUuidFromHex } from '../common/uuid.js';
import { cidrContains, formatIpv4, parseCidr, parseIpv4, type Cidr } from '../common/ipv4.js';
import type { Obj } from './format.js';

export const REDACTED = 'redacted';

/** Where redacted subnets go. */
const POOL: Cidr = { start: parseIpv4('10.128.0.0')!, bits: 9 };

interface SubnetMove {
  from: Cidr;
  to: number;
}

/** Whether a NAPI network is the admin network (kept as it is: each DC has its own). */
export function isAdminNetwork(n: Obj): boolean {
  return n.nic_tag === 'admin' || n.name === 'admin';
}

export class Redactor {
  private readonly secret: Buffer;
  private readonly moves: SubnetMove[] = [];
  private readonly bySubnet = new Map<string, SubnetMove>();
  private nextFree = POOL.start;

  constructor(
    private readonly adminUuid: string,
    secret?: Buffer,
  ) {
    this.secret = secret ?? randomBytes(32);
  }

  private hash(kind: string, value: string): string {
    return createHmac('sha256', this.secret).update(`${kind}\0${value}`).digest('hex');
  }

  owner(uuid: unknown): unknown {
    if (typeof uuid !== 'string' || uuid === '' || uuid.toLowerCase() === this.adminUuid) return uuid;
    return repeatableUuidFromHex(this.hash('owner', uuid.toLowerCase()));
  }

  private owners(list: unknown): unknown {
    return Array.isArray(list) ? list.map((u) => this.owner(u)) : list;
  }

  vmName(value: unknown): unknown {
    return typeof value === 'string' && value !== '' ? `vm-${this.hash('vm-name', value).slice(0, 12)}` : value;
  }

  serverHostname(value: unknown): unknown {
    return typeof value === 'string' && value !== '' ? `cn-${this.hash('cn-hostname', value).slice(0, 12)}` : value;
  }

  /** Learn a network's subnet (customer networks only) before anything in it is mapped. */
  private moveOf(subnet: unknown): SubnetMove | undefined {
    if (typeof subnet !== 'string') return undefined;
    const known = this.bySubnet.get(subnet);
    if (known) return known;
    const from = parseCidr(subnet);
    if (!from) return undefined;
    const size = 2 ** (32 - from.bits);
    // Aligned to its own size, as a subnet's start must be.
    const to = Math.ceil(this.nextFree / size) * size;
    if (to + size - 1 > POOL.start + 2 ** (32 - POOL.bits) - 1) {
      throw new Error(`no room left in 10.128.0.0/9 for subnet ${subnet} (too many or too large customer subnets to redact)`);
    }
    this.nextFree = to + size;
    const move = { from, to };
    this.bySubnet.set(subnet, move);
    this.moves.push(move);
    return move;
  }

  /** An IPv4 address (or `a.b.c.d/n`) in a moved subnet, moved; anything else as it is. */
  ip(value: unknown): unknown {
    if (typeof value !== 'string') return value;
    const [addr, bits] = value.split('/');
    const n = parseIpv4(addr);
    if (n === undefined) return value;
    for (const m of this.moves) {
      if (cidrContains(m.from, n)) {
        const moved = formatIpv4(m.to + (n - m.from.start));
        return bits === undefined ? moved : `${moved}/${bits}`;
      }
    }
    return value;
  }

  private ips(list: unknown): unknown {
    return Array.isArray(list) ? list.map((v) => this.ip(v)) : list;
  }

  private routes(routes: unknown): unknown {
    if (typeof routes !== 'object' || routes === null) return routes;
    const out: Obj = {};
    for (const [dest, gw] of Object.entries(routes)) out[String(this.ip(dest))] = this.ip(gw);
    return out;
  }

  network(n: Obj): Obj {
    const out: Obj = { ...n };
    if (!isAdminNetwork(n)) {
      const move = this.moveOf(n.subnet);
      if (move) out.subnet = `${formatIpv4(move.to)}/${move.from.bits}`;
      for (const k of ['gateway', 'provision_start_ip', 'provision_end_ip']) if (k in out) out[k] = this.ip(out[k]);
      if ('resolvers' in out) out.resolvers = this.ips(out.resolvers);
      if ('routes' in out) out.routes = this.routes(out.routes);
    }
    if ('owner_uuids' in out) out.owner_uuids = this.owners(out.owner_uuids);
    return out;
  }

  pool(p: Obj): Obj {
    return 'owner_uuids' in p ? { ...p, owner_uuids: this.owners(p.owner_uuids) } : { ...p };
  }

  image(m: Obj): Obj {
    const out: Obj = { ...m, owner: this.owner(m.owner) };
    if (Array.isArray(m.acl)) out.acl = this.owners(m.acl);
    return out;
  }

  /** PAPI's package: its owners are `owner_uuids` (sdc-papi's schema). */
  package(p: Obj): Obj {
    return 'owner_uuids' in p ? { ...p, owner_uuids: this.owners(p.owner_uuids) } : { ...p };
  }

  nic(nic: Obj): Obj {
    const out: Obj = { ...nic };
    for (const k of ['ip', 'gateway']) if (k in out) out[k] = this.ip(out[k]);
    for (const k of ['ips', 'gateways', 'resolvers']) if (k in out) out[k] = this.ips(out[k]);
    if ('routes' in out) out.routes = this.routes(out.routes);
    if ('owner_uuid' in out) out.owner_uuid = this.owner(out.owner_uuid);
    return out;
  }

  vm(vm: Obj): Obj {
    const out: Obj = { ...vm };
    if ('alias' in out) out.alias = this.vmName(out.alias);
    if ('hostname' in out) out.hostname = this.vmName(out.hostname);
    if ('owner_uuid' in out) out.owner_uuid = this.owner(out.owner_uuid);
    out.customer_metadata = values(vm.customer_metadata, () => REDACTED);
    out.internal_metadata = values(vm.internal_metadata, (v) => (typeof v === 'string' ? REDACTED : v));
    out.tags = values(vm.tags, (v) => (typeof v === 'string' ? REDACTED : v));
    if (Array.isArray(vm.nics)) out.nics = vm.nics.map((n) => (typeof n === 'object' && n !== null ? this.nic(n as Obj) : n));
    if ('resolvers' in out) out.resolvers = this.ips(out.resolvers);
    if ('routes' in out) out.routes = this.routes(out.routes);
    return out;
  }

  server(s: Obj): Obj {
    const out: Obj = { ...s, hostname: this.serverHostname(s.hostname) };
    const sysinfo = s.sysinfo;
    if (typeof sysinfo === 'object' && sysinfo !== null) {
      const si: Obj = { ...(sysinfo as Obj) };
      if ('Hostname' in si) si.Hostname = this.serverHostname(si.Hostname);
      for (const key of ['Network Interfaces', 'Virtual Network Interfaces']) {
        const nics = si[key];
        if (typeof nics !== 'object' || nics === null) continue;
        const mapped: Obj = {};
        for (const [name, nic] of Object.entries(nics as Obj)) {
          mapped[name] = typeof nic === 'object' && nic !== null ? { ...(nic as Obj), ip4addr: this.ip((nic as Obj).ip4addr) } : nic;
        }
        si[key] = mapped;
      }
      out.sysinfo = si;
    }
    return out;
  }
}

/** The same keys, each value replaced. */
function values(obj: unknown, replace: (v: unknown) => unknown): unknown {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return obj;
  const out: Obj = {};
  for (const [k, v] of Object.entries(obj)) out[k] = replace(v);
  return out;
}
