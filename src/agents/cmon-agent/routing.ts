/**
 * Which mock CN a cmon-agent request addresses. A real cmon-agent listens on its CN's admin IP
 * (triton-cmon-agent lib/app.js), and CMON calls `http://<ip>:9163` with a restify client that
 * sets no Host of its own, so the Host header is `<ip>:9163`: the address CMON has for that CN
 * (triton-cmon lib/endpoints/metrics.js, the ip from lib/updater.js agentIpFromSysinfo). Mock
 * CNs may share one listening address, so the Host header is what tells them apart (the design
 * in triton-mockcloud docs/design.md), in this order:
 *
 *   Host: <server_uuid>[...]   that CN (a uuid is never ambiguous);
 *   Host: <ip>[:port]          the one CN whose "Admin IP" is <ip> (how CMON addresses a CN
 *                              without a "CN Agent IP", and what a NAT or proxy in front of a
 *                              shared address keeps), else the one CN whose "CN Agent IP" is <ip>;
 *   otherwise                  the CN(s) on the local address the request arrived on.
 *
 * `/v1/<vm>/metrics` searches the addressed CN, else every CN on the address (VM uuids are
 * unique). `/v1/gz/metrics` answers for exactly one CN; when several share the address and
 * nothing names one it is refused with 409 Conflict: an aggregate would hand every CN the same
 * numbers, which CMON would file under each CN; a refusal is honest (CMON turns it into a 500
 * for that CN).
 */
import net from 'node:net';
import { isUuid } from '../../common/uuid.js';
import type { FleetView } from '../../runtime/agent-plugin.js';
import { adminNicOf } from '../../mockcn/sysinfo-file.js';
import type { MockCn } from '../../mockcn/types.js';

/** `::ffff:127.0.0.5` → `127.0.0.5`. */
export function plainAddress(address: string | undefined): string {
  if (!address) return '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/** The CN uuid in a Host header like `<uuid>`, `<uuid>:9163` or `<uuid>.cmon.<dc>.<domain>`. */
export function hostServerUuid(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const first = host.replace(/:\d+$/, '').split('.')[0] ?? '';
  return isUuid(first) ? first.toLowerCase() : undefined;
}

/** The IP in a Host header like `10.99.99.41`, `10.99.99.41:9163` or `[fd00::1]:9163`. */
export function hostIp(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  const ip = bracketed ? bracketed[1]! : host.replace(/:\d+$/, '');
  return net.isIP(ip) !== 0 ? plainAddress(ip) : undefined;
}

export function adminIpOf(cn: MockCn): string | undefined {
  return adminNicOf(cn.sysinfo).ip;
}

export function agentIpOf(cn: MockCn): string | undefined {
  const ip = cn.sysinfo['CN Agent IP'] ?? cn.agentAddress?.ip;
  return typeof ip === 'string' && ip ? ip : undefined;
}

/** What a Host header names: one CN, several (a shared address), a uuid of no CN, or nothing. */
export type HostTarget =
  | { kind: 'cn'; cn: MockCn }
  | { kind: 'shared'; ip: string; cns: MockCn[] }
  | { kind: 'unknown-uuid'; uuid: string }
  | { kind: 'none' };

/**
 * CNs by agent IP and by admin IP. Rebuilt when the fleet changes (`invalidate`) or when a CN
 * turns out to have moved to another address, so a request costs a map lookup, not a walk
 * over the fleet.
 */
export class AddressIndex {
  private byIp = new Map<string, MockCn[]>();
  private byAdminIp = new Map<string, MockCn[]>();
  private dirty = true;

  constructor(private readonly fleet: FleetView) {}

  invalidate(): void {
    this.dirty = true;
  }

  /** The CNs whose agent IP is `ip`. */
  at(ip: string): MockCn[] {
    return this.lookup(() => this.byIp, agentIpOf, ip);
  }

  /** The CNs whose "Admin IP" is `ip`. */
  withAdminIp(ip: string): MockCn[] {
    return this.lookup(() => this.byAdminIp, adminIpOf, ip);
  }

  /** `ip` in one of the maps, rebuilt first if a CN found there has moved or gone. */
  private lookup(map: () => Map<string, MockCn[]>, ipOf: (cn: MockCn) => string | undefined, ip: string): MockCn[] {
    if (this.dirty) this.rebuild();
    const cns = map().get(ip) ?? [];
    if (!cns.some((cn) => ipOf(cn) !== ip || this.fleet.get(cn.uuid) !== cn)) return cns;
    this.rebuild();
    return map().get(ip) ?? [];
  }

  /** The CN(s) a Host header names (see the top of this file). */
  resolveHost(host: string | undefined): HostTarget {
    const uuid = hostServerUuid(host);
    if (uuid) {
      const cn = this.fleet.get(uuid);
      return cn ? { kind: 'cn', cn } : { kind: 'unknown-uuid', uuid };
    }
    const ip = hostIp(host);
    if (!ip) return { kind: 'none' };
    const admins = this.withAdminIp(ip);
    if (admins.length === 1) return { kind: 'cn', cn: admins[0]! };
    const agents = this.at(ip);
    if (agents.length === 1 && admins.length === 0) return { kind: 'cn', cn: agents[0]! };
    const all = [...new Set([...admins, ...agents])];
    return all.length > 0 ? { kind: 'shared', ip, cns: all } : { kind: 'none' };
  }

  private rebuild(): void {
    const byIp = new Map<string, MockCn[]>();
    const byAdminIp = new Map<string, MockCn[]>();
    const add = (map: Map<string, MockCn[]>, ip: string | undefined, cn: MockCn): void => {
      if (!ip) return;
      const list = map.get(ip);
      if (list) list.push(cn);
      else map.set(ip, [cn]);
    };
    for (const cn of this.fleet.list()) {
      add(byIp, agentIpOf(cn), cn);
      add(byAdminIp, adminIpOf(cn), cn);
    }
    this.byIp = byIp;
    this.byAdminIp = byAdminIp;
    this.dirty = false;
  }
}
