/**
 * CNAPI's side of DAPI (sdc-cnapi lib/endpoints/allocations.js, lib/designation.js):
 * which servers DAPI is given, and capacity for the server routes. The provisions DAPI adds
 * to a server are those of open waitlist tickets (VMAPI takes one per provision).
 */
import type { Sysinfo } from '../../common/sysinfo.js';
import { Allocator } from './dapi/allocator.js';
import type { DapiServer, Obj } from './dapi/algorithms.js';
import { renderServer, type Extras, type ServerRecord, type ServerRegistry } from './servers.js';

/** VM states DAPI does not count (CNAPI's getServerVms predicate). */
const UNCOUNTED_STATES = new Set(['destroyed', 'failed', 'provisioning']);

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
    // DAPI counts the VMs of each server's last status report (reportedVms), so they come along.
    .map((r) => dapiServer(r, { status: true, sysinfo: true, memory: true, disk: true, vms: true }));
}
