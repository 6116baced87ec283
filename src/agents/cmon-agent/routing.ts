/**
 * Which mock CN a cmon-agent request addresses. CMON calls `http://<CN Agent IP>:9163` and sets
 * no Host of its own (restify's default, `<ip>:9163`), so the only thing that tells CNs apart is
 * the local address the request arrived on:
 *
 *   per-CN IP mode   every CN has its own `CN Agent IP` (e.g. 127.x.y.z on Linux, where all of
 *                    127/8 is local) and the listener binds 0.0.0.0: the local address names
 *                    the CN;
 *   shared-IP mode   CNs share one IP: `/v1/<vm>/metrics` is still exact (VM uuids are unique,
 *                    every CN on the address is searched); `/v1/gz/metrics` is answered for the
 *                    CN the Host header names (`Host: <server_uuid>[...]`), for the only CN on
 *                    the address if there is one, and otherwise refused with 409 Conflict.
 *                    An aggregate would hand every CN the same numbers, which CMON would file
 *                    under each CN; a refusal is honest (CMON turns it into a 500 for that CN).
 */
import { isUuid } from '../../common/uuid.js';
import type { FleetView } from '../../runtime/agent-plugin.js';
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

export function agentIpOf(cn: MockCn): string | undefined {
  const ip = cn.sysinfo['CN Agent IP'] ?? cn.agentAddress?.ip;
  return typeof ip === 'string' && ip ? ip : undefined;
}

/**
 * CNs by agent IP. Rebuilt when the fleet changes (`invalidate`) or when a CN turns out to have
 * moved to another address, so a request costs a map lookup, not a walk over the fleet.
 */
export class AddressIndex {
  private byIp = new Map<string, MockCn[]>();
  private dirty = true;

  constructor(private readonly fleet: FleetView) {}

  invalidate(): void {
    this.dirty = true;
  }

  /** The CNs whose agent IP is `ip`. */
  at(ip: string): MockCn[] {
    if (this.dirty) this.rebuild();
    let cns = this.byIp.get(ip) ?? [];
    if (cns.some((cn) => agentIpOf(cn) !== ip || this.fleet.get(cn.uuid) !== cn)) {
      this.rebuild();
      cns = this.byIp.get(ip) ?? [];
    }
    return cns;
  }

  private rebuild(): void {
    const byIp = new Map<string, MockCn[]>();
    for (const cn of this.fleet.list()) {
      const ip = agentIpOf(cn);
      if (!ip) continue;
      const list = byIp.get(ip);
      if (list) list.push(cn);
      else byIp.set(ip, [cn]);
    }
    this.byIp = byIp;
    this.dirty = false;
  }
}
