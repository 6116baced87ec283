/**
 * CNAPI's side of DAPI (sdc-cnapi lib/endpoints/allocations.js, lib/designation.js):
 * which servers DAPI is given, the provisioning tickets it counts, and capacity for the
 * server routes.
 *
 * Tickets: on a real DC VMAPI opens a waitlist ticket per provision and DAPI counts the VMs of
 * open tickets ("Add VMs which have open provisioning tickets") until the VM shows up in the
 * server's status. The dev VMAPI opens none, so every allocation leaves such a ticket here,
 * closed once the server reports the VM (or after ten minutes).
 */
import type { Sysinfo } from '../../common/sysinfo.js';
import { Allocator } from './dapi/allocator.js';
import type { DapiServer, Obj, Ticket } from './dapi/algorithms.js';
import { renderServer, type Extras, type ServerRecord, type ServerRegistry } from './servers.js';

/** How long an allocation counts against a server if its VM never shows up in a status report. */
const PENDING_TTL_MS = 10 * 60 * 1000;

/** VM states DAPI does not count (CNAPI's getServerVms predicate). */
const UNCOUNTED_STATES = new Set(['destroyed', 'failed', 'provisioning']);

/** Allocations made but not yet visible in the server's reported `vms`. */
export class PendingAllocations {
  private readonly byServer = new Map<string, Map<string, { extra: Obj; expires: number }>>();

  add(serverUuid: string, vmUuid: string, extra: Obj, now = Date.now()): void {
    let m = this.byServer.get(serverUuid);
    if (!m) this.byServer.set(serverUuid, (m = new Map()));
    m.set(vmUuid, { extra, expires: now + PENDING_TTL_MS });
  }

  /** The open tickets, dropping those whose VM the server now reports. */
  tickets(servers: ServerRegistry, now = Date.now()): Ticket[] {
    const out: Ticket[] = [];
    for (const [serverUuid, m] of this.byServer) {
      const reported = (servers.get(serverUuid)?.vms ?? {}) as Record<string, unknown>;
      for (const [vm, p] of m) {
        if (p.expires < now || Object.prototype.hasOwnProperty.call(reported, vm)) m.delete(vm);
        else out.push({ id: vm, server_uuid: serverUuid, scope: 'vm', action: 'provision', status: 'active', extra: p.extra });
      }
      if (m.size === 0) this.byServer.delete(serverUuid);
    }
    return out;
  }

  forgetServer(serverUuid: string): void {
    this.byServer.delete(serverUuid);
  }
}

/** The VMs DAPI counts on a server: those its cn-agent last reported, but not destroyed, failed or provisioning. */
export function reportedVms(server: DapiServer): Obj[] {
  return Object.entries(server.vms ?? {})
    .filter(([, vm]) => vm && !UNCOUNTED_STATES.has(String(vm.state)))
    .map(([uuid, vm]) => ({ uuid, ...vm }));
}

export function newAllocator(): Allocator {
  return new Allocator({ getServerVms: reportedVms });
}

/** What DAPI needs of a server record (ModelServer.list's extras: status, sysinfo, memory, disk). */
export function dapiServer(record: ServerRecord, extras: Extras): DapiServer {
  const s = renderServer(record, extras, null) as DapiServer;
  if (!extras.last_heartbeat) delete s.last_heartbeat;
  // DAPI writes into the objects it is given (sysinfo NICs, vms): never into the registry's.
  s.sysinfo = structuredClone((record.sysinfo ?? {}) as Sysinfo) as Obj;
  if (s.vms) s.vms = structuredClone(s.vms);
  return s;
}

/**
 * allocations.js getServers: setup servers (unreserved for /allocate; not headnodes while DAPI
 * filters headnodes), optionally limited to `uuids`, in CNAPI's uuid order.
 */
export function serversForDapi(
  registry: ServerRegistry,
  opts: { uuids?: string[]; unreservedOnly: boolean; filterHeadnode: boolean },
): DapiServer[] {
  return registry
    .list()
    .filter((r) => r.uuid !== 'default' && r.setup === true)
    .filter((r) => !opts.uuids || opts.uuids.includes(r.uuid))
    .filter((r) => !opts.unreservedOnly || r.reserved === false)
    .filter((r) => !opts.filterHeadnode || r.headnode === false)
    .map((r) => dapiServer(r, { status: true, sysinfo: true, memory: true, disk: true }));
}
