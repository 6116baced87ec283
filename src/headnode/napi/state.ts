/**
 * Everything the dev NAPI knows, in memory, plus its persisted form. Nic tags, networks
 * and NICs are stored; each network's IP table is rebuilt at load from what determines it
 * (the network's own reserved addresses, the NICs holding addresses, and the freed list),
 * so a NIC and its address can never disagree after a crash. The whole state is one
 * journaled document ("napi", see store.ts): a save appends the NICs and freed addresses that
 * changed; a change of nic tags, networks, pools, aggregations or UpdateIP's explicit address
 * records rewrites the whole document.
 */
import { broadcastAddress, cidrContains, formatIpv4 } from '../../common/ipv4.js';
import { napiIpv4 } from './addr.js';
import { applyRecordEntries, TrackedMap, type RecordEntry } from '../journal.js';
import {
  cidrOf,
  type AggregationRecord,
  type IpRecord,
  type NetworkPoolRecord,
  type NetworkRecord,
  type NicRecord,
  type NicTagRecord,
} from './model.js';

export interface NapiSnapshot {
  version: 1;
  nic_tags: NicTagRecord[];
  networks: NetworkRecord[];
  nics: NicRecord[];
  /** network uuid -> dotted IP -> when it was freed (ms). */
  freed: Record<string, Record<string, number>>;
  /** network uuid -> dotted IP -> the record UpdateIP wrote (reservations, owners of non-NIC addresses). */
  ips?: Record<string, Record<string, Omit<IpRecord, 'ip'>>>;
  network_pools?: NetworkPoolRecord[];
  aggregations?: AggregationRecord[];
}

/** A journal entry of the NAPI document: a NIC (by its numeric MAC) or a freed address ("<network> <ip>"). */
export type NapiJournalEntry = ({ t: 'nic' } & RecordEntry<NicRecord>) | ({ t: 'freed' } & RecordEntry<number>);

export class NapiState {
  readonly nicTags = new TrackedMap<string, NicTagRecord>();
  readonly networks = new TrackedMap<string, NetworkRecord>();
  readonly nics = new TrackedMap<number, NicRecord>();
  readonly pools = new TrackedMap<string, NetworkPoolRecord>();
  /** Aggregations by id (`<server uuid>-<name>`). */
  readonly aggregations = new TrackedMap<string, AggregationRecord>();
  /** network uuid -> ip -> record. */
  private readonly ips = new Map<string, Map<number, IpRecord>>();
  /** Per network: every address below this one in the provision range has a record. */
  private readonly unrecordedFrom = new Map<string, number>();
  /** Addresses whose freed state changed since the last save ("<network> <ip>"). */
  private freedChanged = new Set<string>();
  /** Nic tags or networks changed: the next save rewrites the whole document. */
  private structural = false;
  readonly adminUuid: string;

  constructor(adminUuid: string) {
    this.adminUuid = adminUuid;
    // Rare changes: each rewrites the whole document.
    for (const m of [this.nicTags, this.networks, this.pools, this.aggregations] as TrackedMap<unknown, unknown>[]) {
      m.onChange = () => (this.structural = true);
    }
  }

  // --- networks and their IP tables

  addNetwork(net: NetworkRecord): void {
    this.networks.set(net.uuid, net);
    this.ips.set(net.uuid, this.staticIps(net));
    this.unrecordedFrom.delete(net.uuid);
  }

  removeNetwork(uuid: string): void {
    this.networks.delete(uuid);
    this.ips.delete(uuid);
    this.unrecordedFrom.delete(uuid);
  }

  /** Rebuild the reserved records of a network after its gateway/resolvers/range changed. */
  refreshStaticIps(net: NetworkRecord): void {
    const table = this.ipTable(net.uuid);
    for (const [ip, rec] of [...table]) {
      if (rec.belongs_to_type === 'other' && rec.belongs_to_uuid === this.adminUuid && rec.reserved) table.delete(ip);
      else if (!rec.reserved && rec.belongs_to_uuid === undefined && rec.freed_at === undefined) table.delete(ip);
    }
    for (const [ip, rec] of this.staticIps(net)) if (!table.has(ip)) table.set(ip, rec);
    this.unrecordedFrom.delete(net.uuid);
    this.structural = true;
  }

  /**
   * The records NAPI creates with a network: the gateway, resolvers inside the subnet and
   * the broadcast address (admin-reserved), and placeholders just outside the provision
   * range (markers for the gap search).
   */
  private staticIps(net: NetworkRecord): Map<number, IpRecord> {
    const table = new Map<number, IpRecord>();
    const reserve = (ip: number): void => {
      if (!table.has(ip)) {
        table.set(ip, { ip, reserved: true, belongs_to_type: 'other', belongs_to_uuid: this.adminUuid, owner_uuid: this.adminUuid });
      }
    };
    const cidr = cidrOf(net);
    if (net.gateway !== undefined) reserve(net.gateway);
    for (const r of net.resolvers) if (cidrContains(cidr, r)) reserve(r);
    reserve(broadcastAddress(cidr));
    for (const ip of [net.provision_start_ip - 1, net.provision_end_ip + 1]) {
      if (!table.has(ip) && ip >= 0 && ip <= 0xffffffff) table.set(ip, { ip, reserved: false });
    }
    return table;
  }

  ipTable(networkUuid: string): Map<number, IpRecord> {
    let t = this.ips.get(networkUuid);
    if (!t) {
      t = new Map();
      this.ips.set(networkUuid, t);
    }
    return t;
  }

  getIp(networkUuid: string, ip: number): IpRecord | undefined {
    return this.ips.get(networkUuid)?.get(ip);
  }

  /** NAPI's `provisionable()`: unowned, or an admin "other" reservation (gateway, resolver). */
  isProvisionable(rec: IpRecord | undefined): boolean {
    if (!rec || !rec.belongs_to_uuid || !rec.belongs_to_type) return true;
    return rec.belongs_to_type === 'other' && rec.belongs_to_uuid === this.adminUuid;
  }

  /**
   * The next address to hand out on a network, as NAPI picks it: the lowest address in
   * the provision range with no record at all, else the unreserved freed address that was
   * freed longest ago; undefined when the range is full.
   */
  nextFreeIp(net: NetworkRecord): number | undefined {
    const table = this.ipTable(net.uuid);
    // Records are only ever added to a table while the network stays as it is (a freed address
    // keeps its record), so the search for the lowest unrecorded one resumes where it stopped.
    let ip = Math.max(net.provision_start_ip, this.unrecordedFrom.get(net.uuid) ?? 0);
    for (; ip <= net.provision_end_ip; ip++) {
      if (!table.has(ip)) {
        this.unrecordedFrom.set(net.uuid, ip);
        return ip;
      }
    }
    this.unrecordedFrom.set(net.uuid, ip);
    let best: IpRecord | undefined;
    for (const rec of table.values()) {
      if (rec.ip < net.provision_start_ip || rec.ip > net.provision_end_ip) continue;
      if (rec.reserved || rec.belongs_to_uuid !== undefined) continue;
      if (!best || (rec.freed_at ?? 0) < (best.freed_at ?? 0)) best = rec;
    }
    return best?.ip;
  }

  assignIp(networkUuid: string, ip: number, owner: { belongs_to_type: string; belongs_to_uuid: string; owner_uuid: string }, reserved?: boolean): void {
    const table = this.ipTable(networkUuid);
    const prev = table.get(ip);
    if (prev?.freed_at !== undefined) this.freedChanged.add(`${networkUuid} ${formatIpv4(ip)}`);
    if (prev?.explicit) this.structural = true;
    table.set(ip, {
      ip,
      reserved: reserved ?? prev?.reserved ?? false,
      belongs_to_type: owner.belongs_to_type,
      belongs_to_uuid: owner.belongs_to_uuid,
      owner_uuid: owner.owner_uuid,
      ...(prev?.explicit ? { explicit: true } : {}),
    });
  }

  /** UpdateIP's write: the record as given replaces the address's record. */
  putIp(networkUuid: string, rec: IpRecord): void {
    this.ipTable(networkUuid).set(rec.ip, rec);
    // UpdateIP's records are kept in the whole document only (a rare write).
    this.structural = true;
  }

  /** NAPI's `unassignBatch`: reserved addresses keep their owner_uuid. */
  unassignIp(networkUuid: string, ip: number, now: number): void {
    const table = this.ipTable(networkUuid);
    const prev = table.get(ip);
    const rec: IpRecord = { ip, reserved: prev?.reserved ?? false, freed_at: now };
    if (prev?.reserved && prev.owner_uuid) rec.owner_uuid = prev.owner_uuid;
    if (prev?.explicit) {
      rec.explicit = true;
      this.structural = true;
    }
    table.set(ip, rec);
    this.freedChanged.add(`${networkUuid} ${formatIpv4(ip)}`);
  }

  ipRecords(networkUuid: string): IpRecord[] {
    return [...this.ipTable(networkUuid).values()].sort((a, b) => a.ip - b.ip);
  }

  // --- persistence

  snapshot(): NapiSnapshot {
    const freed: NapiSnapshot['freed'] = {};
    for (const [uuid, table] of this.ips) {
      for (const rec of table.values()) {
        if (rec.freed_at !== undefined && rec.belongs_to_uuid === undefined) {
          (freed[uuid] ??= {})[formatIpv4(rec.ip)] = rec.freed_at;
        }
      }
    }
    const ips: NonNullable<NapiSnapshot['ips']> = {};
    for (const [uuid, table] of this.ips) {
      for (const rec of table.values()) {
        if (!rec.explicit) continue;
        const { ip, ...rest } = rec;
        (ips[uuid] ??= {})[formatIpv4(ip)] = rest;
      }
    }
    return {
      version: 1,
      nic_tags: [...this.nicTags.values()],
      networks: [...this.networks.values()],
      nics: [...this.nics.values()],
      freed,
      ips,
      network_pools: [...this.pools.values()],
      aggregations: [...this.aggregations.values()],
    };
  }

  /**
   * What changed since the last save, as journal entries (each NIC and freed address whole, as
   * it is now), or 'all' after a change of nic tags or networks.
   */
  drainJournal(): NapiJournalEntry[] | 'all' {
    const nics = this.nics.takeChanged();
    const freed = this.freedChanged;
    this.freedChanged = new Set();
    if (this.structural) {
      this.structural = false;
      this.nicTags.forgetChanges();
      this.networks.forgetChanges();
      this.pools.forgetChanges();
      this.aggregations.forgetChanges();
      return 'all';
    }
    const out: NapiJournalEntry[] = [];
    for (const mac of nics) out.push({ t: 'nic', k: String(mac), v: this.nics.get(mac) ?? null });
    for (const key of freed) {
      const [net, ipText] = key.split(' ') as [string, string];
      const rec = this.getIp(net, napiIpv4(ipText)!);
      const at = rec && rec.freed_at !== undefined && rec.belongs_to_uuid === undefined ? rec.freed_at : null;
      out.push({ t: 'freed', k: key, v: at });
    }
    return out;
  }

  /**
   * Load a stored snapshot (validated by shape; a damaged one throws) with the journal's
   * entries applied.
   */
  restore(doc: unknown, entries: readonly unknown[] = []): void {
    const snap = doc as Partial<NapiSnapshot>;
    if (!snap || typeof snap !== 'object' || snap.version !== 1 || !Array.isArray(snap.nic_tags) || !Array.isArray(snap.networks) || !Array.isArray(snap.nics)) {
      throw new Error('the stored NAPI state is not a version 1 document');
    }
    const nicEntries: RecordEntry<NicRecord>[] = [];
    const freed: Record<string, Record<string, number>> = structuredClone(snap.freed ?? {});
    for (const e of entries as NapiJournalEntry[]) {
      if (e?.t === 'nic') nicEntries.push({ k: e.k, v: e.v });
      else if (e?.t === 'freed') {
        const [net, ip] = e.k.split(' ') as [string, string];
        if (e.v === null) {
          if (freed[net]) delete freed[net][ip];
        } else (freed[net] ??= {})[ip] = e.v;
      } else throw new Error(`the NAPI journal has an entry of no known kind: ${JSON.stringify(e).slice(0, 200)}`);
    }
    const nics = applyRecordEntries(snap.nics, 'mac', nicEntries);
    this.nicTags.clear();
    this.networks.clear();
    this.nics.clear();
    this.ips.clear();
    this.unrecordedFrom.clear();
    for (const t of snap.nic_tags) this.nicTags.set(t.name, t);
    for (const n of snap.networks) this.addNetwork(n);
    for (const [uuid, ips] of Object.entries(freed)) {
      if (!this.networks.has(uuid)) continue;
      for (const [ipText, at] of Object.entries(ips)) {
        const ip = napiIpv4(ipText);
        if (ip !== undefined) this.unassignIp(uuid, ip, at);
      }
    }
    for (const [uuid, ips] of Object.entries(snap.ips ?? {})) {
      if (!this.networks.has(uuid)) continue;
      for (const [ipText, rec] of Object.entries(ips)) {
        const ip = napiIpv4(ipText);
        if (ip !== undefined) this.putIp(uuid, { ...rec, ip });
      }
    }
    this.pools.clear();
    for (const p of snap.network_pools ?? []) this.pools.set(p.uuid, p);
    this.aggregations.clear();
    for (const a of snap.aggregations ?? []) this.aggregations.set(a.id, a);
    for (const nic of nics) {
      this.nics.set(nic.mac, nic);
      if (nic.ip !== undefined && nic.network_uuid && this.networks.has(nic.network_uuid)) {
        this.assignIp(nic.network_uuid, nic.ip, nic);
      }
    }
    // What was just loaded is on disk already.
    this.nicTags.forgetChanges();
    this.networks.forgetChanges();
    this.pools.forgetChanges();
    this.aggregations.forgetChanges();
    this.nics.forgetChanges();
    this.freedChanged = new Set();
    this.structural = false;
  }
}
