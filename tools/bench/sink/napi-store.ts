/**
 * The NAPI state the sink keeps: two networks (admin, external), the NICs by MAC, and an IP
 * allocator per network. Just enough for `create-servers` (admin NIC allocation) and for
 * net-agent's NIC traffic to get plausible answers: NIC objects carry the network's fields,
 * every NIC answer has an Etag, and DELETE honours If-Match.
 */
import { randomUUID } from 'node:crypto';
import { NIC_ANTI_SPOOF_FLAGS } from '../../../src/common/changefeed/protocol.js';
import { MockcloudError } from '../../../src/common/errors.js';
import { formatIpv4, parseIpv4 } from '../../../src/common/ipv4.js';
import { isObject } from './http-util.js';

export interface SinkNetwork {
  uuid: string;
  name: string;
  nic_tag: string;
  vlan_id: number;
  mtu: number;
  subnet: string;
  netmask: string;
  provision_start_ip: string;
  provision_end_ip: string;
  gateway?: string;
  resolvers: string[];
  owner_uuids?: string[];
}

export type Nic = Record<string, unknown> & { mac: string; etag: string };

const BELONGS_TO_TYPES = new Set(['other', 'server', 'zone']);
const STATES = new Set(['provisioning', 'stopped', 'running']);
/** Fields a NIC takes from a create or update body (NAPI's create/update schema). */
const NIC_FIELDS = [
  'belongs_to_uuid',
  'belongs_to_type',
  'owner_uuid',
  'cn_uuid',
  'ip',
  'model',
  'network_uuid',
  'nic_tag',
  'nic_tags_provided',
  'nic_tags_available',
  'primary',
  'reserved',
  'state',
  'underlay',
  'vlan_id',
  ...NIC_ANTI_SPOOF_FLAGS,
] as const;

/** `00:10:fe:aa:bb:cc` from `0010feaabbcc`, `00-10-fe-...` or the colon form; undefined if not a MAC. */
export function normalizeMac(raw: string): string | undefined {
  const hex = raw.toLowerCase().replace(/[:-]/g, '');
  if (!/^[0-9a-f]{12}$/.test(hex)) return undefined;
  return hex.match(/../g)!.join(':');
}

export class NapiStore {
  readonly admin: SinkNetwork;
  readonly external: SinkNetwork;
  private readonly networks = new Map<string, SinkNetwork>();
  private readonly nextIp = new Map<string, number>();
  private readonly nics = new Map<string, Nic>();
  private readonly nicTags = new Set<string>(['admin', 'external']);
  private etagSeq = 0;

  constructor() {
    this.admin = {
      uuid: randomUUID(),
      name: 'admin',
      nic_tag: 'admin',
      vlan_id: 0,
      mtu: 1500,
      subnet: '10.192.0.0/12',
      netmask: '255.240.0.0',
      provision_start_ip: '10.192.0.10',
      provision_end_ip: '10.207.255.250',
      resolvers: ['10.192.0.2'],
    };
    this.external = {
      uuid: randomUUID(),
      name: 'external',
      nic_tag: 'external',
      vlan_id: 0,
      mtu: 1500,
      subnet: '172.16.0.0/12',
      netmask: '255.240.0.0',
      provision_start_ip: '172.16.0.10',
      provision_end_ip: '172.31.255.250',
      gateway: '172.16.0.1',
      resolvers: ['8.8.8.8', '8.8.4.4'],
    };
    for (const n of [this.admin, this.external]) {
      this.networks.set(n.uuid, n);
      this.nextIp.set(n.uuid, parseIpv4(n.provision_start_ip)!);
    }
  }

  get nicCount(): number {
    return this.nics.size;
  }

  /** Forget every NIC and restart IP allocation (between benchmark steps). */
  clear(): void {
    this.nics.clear();
    for (const n of this.networks.values()) this.nextIp.set(n.uuid, parseIpv4(n.provision_start_ip)!);
  }

  listNetworks(name?: string): SinkNetwork[] {
    return [...this.networks.values()].filter((n) => name === undefined || n.name === name);
  }

  /** A network by UUID or by name ("admin"), as NAPI's `/networks/:uuid` accepts both. */
  network(idOrName: string): SinkNetwork {
    const n = this.networks.get(idOrName) ?? [...this.networks.values()].find((x) => x.name === idOrName);
    if (!n) throw new MockcloudError('ResourceNotFound', 'network not found');
    return n;
  }

  addNicTag(name: unknown): { name: string; uuid: string; mtu: number } {
    if (typeof name !== 'string' || !/^[A-Za-z0-9_]{1,31}$/.test(name)) {
      throw new MockcloudError('InvalidParameters', 'invalid nic tag name', {
        errors: [{ field: 'name', code: 'InvalidParameter', message: 'must be 1-31 letters, digits or underscores' }],
      });
    }
    if (this.nicTags.has(name)) {
      throw new MockcloudError('InvalidParameters', 'Invalid parameters', {
        errors: [{ field: 'name', code: 'Duplicate', message: 'Already exists' }],
      });
    }
    this.nicTags.add(name);
    return { name, uuid: randomUUID(), mtu: 1500 };
  }

  listNicTags(): { name: string }[] {
    return [...this.nicTags].map((name) => ({ name }));
  }

  getNic(rawMac: string): Nic {
    const nic = this.nics.get(this.mac(rawMac));
    if (!nic) throw new MockcloudError('ResourceNotFound', 'nic not found');
    return nic;
  }

  listNics(filter: URLSearchParams): Nic[] {
    const keys = ['belongs_to_uuid', 'belongs_to_type', 'owner_uuid', 'cn_uuid', 'network_uuid'].filter((k) => filter.has(k));
    const out: Nic[] = [];
    for (const nic of this.nics.values()) {
      if (keys.every((k) => nic[k] === filter.get(k))) out.push(nic);
    }
    return out;
  }

  /** `POST /nics`, or `POST /networks/:uuid/nics` when `network` is given (allocates an IP). */
  createNic(body: unknown, network?: SinkNetwork): Nic {
    if (!isObject(body)) throw new MockcloudError('InvalidParameters', 'body must be an object');
    const missing = ['belongs_to_uuid', 'belongs_to_type', 'owner_uuid'].filter((k) => typeof body[k] !== 'string');
    if (missing.length > 0) {
      throw new MockcloudError('InvalidParameters', 'Invalid parameters', {
        errors: missing.map((field) => ({ field, code: 'MissingParameter', message: 'Missing parameter' })),
      });
    }
    if (!BELONGS_TO_TYPES.has(body.belongs_to_type as string)) {
      throw fieldError('belongs_to_type', 'must be one of: other, server, zone');
    }
    if (body.state !== undefined && !STATES.has(body.state as string)) {
      throw fieldError('state', 'must be one of: provisioning, stopped, running');
    }
    let mac: string;
    if (body.mac === undefined) {
      mac = this.freeMac();
    } else {
      mac = this.mac(String(body.mac));
      if (this.nics.has(mac)) {
        throw new MockcloudError('InvalidParameters', 'Invalid parameters', {
          errors: [{ field: 'mac', code: 'Duplicate', message: 'Already exists' }],
        });
      }
    }
    const now = new Date().toISOString();
    const nic: Nic = {
      mac,
      primary: false,
      state: 'running',
      created_timestamp: now,
      modified_timestamp: now,
      etag: this.etag(),
    };
    for (const k of NIC_FIELDS) if (body[k] !== undefined) nic[k] = body[k];
    const net = network ?? (typeof body.network_uuid === 'string' ? this.networks.get(body.network_uuid) : undefined);
    if (net) {
      if (nic.ip === undefined) nic.ip = this.allocateIp(net);
      Object.assign(nic, networkFields(net));
    }
    this.nics.set(mac, nic);
    return nic;
  }

  updateNic(rawMac: string, body: unknown): Nic {
    if (!isObject(body)) throw new MockcloudError('InvalidParameters', 'body must be an object');
    const nic = this.getNic(rawMac);
    if (body.state !== undefined && !STATES.has(body.state as string)) {
      throw fieldError('state', 'must be one of: provisioning, stopped, running');
    }
    for (const k of NIC_FIELDS) if (body[k] !== undefined) nic[k] = body[k];
    if (typeof body.network_uuid === 'string') {
      const net = this.networks.get(body.network_uuid);
      if (net) Object.assign(nic, networkFields(net));
    }
    nic.modified_timestamp = new Date().toISOString();
    nic.etag = this.etag();
    return nic;
  }

  deleteNic(rawMac: string, ifMatch: string | undefined): void {
    const nic = this.getNic(rawMac);
    if (ifMatch !== undefined && ifMatch !== '*' && unquote(ifMatch) !== nic.etag) {
      throw new MockcloudError('PreconditionFailed', `if-match '${ifMatch}' didn't match etag '${nic.etag}'`);
    }
    this.nics.delete(nic.mac);
  }

  /** The NIC as NAPI serialises it (the etag goes in a header, not the body). */
  static render(nic: Nic): Record<string, unknown> {
    const { etag: _etag, ...rest } = nic;
    return rest;
  }

  private mac(raw: string): string {
    const mac = normalizeMac(raw);
    if (!mac) throw fieldError('mac', 'invalid MAC address');
    return mac;
  }

  private freeMac(): string {
    for (;;) {
      const bytes = [0x90, 0xb8, 0xd0, ...Array.from({ length: 3 }, () => Math.floor(Math.random() * 256))];
      const mac = bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
      if (!this.nics.has(mac)) return mac;
    }
  }

  private allocateIp(net: SinkNetwork): string {
    const next = this.nextIp.get(net.uuid)!;
    if (next > parseIpv4(net.provision_end_ip)!) {
      throw new MockcloudError('InvalidParameters', `No more free IPs in network ${net.uuid}`, {
        errors: [{ field: 'network_uuid', code: 'SubnetFull', message: 'Subnet is full' }],
      });
    }
    this.nextIp.set(net.uuid, next + 1);
    return formatIpv4(next);
  }

  private etag(): string {
    return `N${(++this.etagSeq).toString(36).toUpperCase()}`;
  }
}

function networkFields(net: SinkNetwork): Record<string, unknown> {
  const out: Record<string, unknown> = {
    network_uuid: net.uuid,
    netmask: net.netmask,
    nic_tag: net.nic_tag,
    vlan_id: net.vlan_id,
    mtu: net.mtu,
    resolvers: net.resolvers,
  };
  if (net.gateway) out.gateway = net.gateway;
  return out;
}

function fieldError(field: string, message: string): MockcloudError {
  return new MockcloudError('InvalidParameters', 'Invalid parameters', {
    errors: [{ field, code: 'InvalidParameter', message }],
  });
}

function unquote(s: string): string {
  return s.replace(/^W\//, '').replace(/^"|"$/g, '');
}
