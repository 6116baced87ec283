/**
 * `POST /allocate` (SelectServer): the part of DAPI a dev headnode needs. A server
 * qualifies when it is setup, `running`, not reserved, not a headnode, offers every
 * required NIC tag and has the VM's RAM free (its RAM after the reservation ratio, minus
 * the VMs it reported and the allocations not yet reported). Among those, non-reservoir
 * servers come first and the one with the most free RAM wins, so provisions spread out.
 *
 * Simplification (documented): no image requirements, traits, locality or overprovision
 * ratios; CPU and disk are reported but only RAM decides.
 */
import { MockcloudError } from '../../common/errors.js';
import type { Sysinfo } from '../../common/sysinfo.js';
import { isUuid } from '../../common/uuid.js';
import type { Params } from '../http.js';
import { ensureParamsValid, invalidParameters } from './validate.js';
import { EXTRAS_ALL, renderServer, serverCapacity, type ServerRecord, type ServerRegistry } from './servers.js';

/** How long an allocation counts against a server if its VM never shows up in a status report. */
const PENDING_TTL_MS = 10 * 60 * 1000;

/** Allocations made but not yet visible in the server's reported `vms`. */
export class PendingAllocations {
  private readonly byServer = new Map<string, Map<string, { ram: number; expires: number }>>();

  add(serverUuid: string, vmUuid: string, ramMiB: number, now = Date.now()): void {
    let m = this.byServer.get(serverUuid);
    if (!m) this.byServer.set(serverUuid, (m = new Map()));
    m.set(vmUuid, { ram: ramMiB, expires: now + PENDING_TTL_MS });
  }

  /** RAM still pending on `server`, dropping entries its status report now covers. */
  pendingRam(server: ServerRecord, now = Date.now()): number {
    const m = this.byServer.get(server.uuid);
    if (!m) return 0;
    const reported = (server.vms ?? {}) as Record<string, unknown>;
    let sum = 0;
    for (const [vm, p] of m) {
      if (p.expires < now || Object.prototype.hasOwnProperty.call(reported, vm)) m.delete(vm);
      else sum += p.ram;
    }
    if (m.size === 0) this.byServer.delete(server.uuid);
    return sum;
  }

  forgetServer(serverUuid: string): void {
    this.byServer.delete(serverUuid);
  }
}

/** NIC tags a server can offer: every `NIC Names` of its physical and virtual NICs and aggrs. */
export function serverNicTags(server: ServerRecord): Set<string> {
  const si = (server.sysinfo ?? {}) as Partial<Sysinfo>;
  const tags = new Set<string>();
  for (const group of [si['Network Interfaces'], si['Virtual Network Interfaces'], si['Link Aggregations']]) {
    for (const nic of Object.values((group ?? {}) as Record<string, { 'NIC Names'?: unknown }>)) {
      const names = nic?.['NIC Names'];
      if (Array.isArray(names)) for (const n of names) if (typeof n === 'string') tags.add(n);
    }
  }
  return tags;
}

interface Step {
  step: string;
  remaining: string[];
  reasons?: Record<string, string>;
}

export function allocate(
  servers: ServerRegistry,
  pending: PendingAllocations,
  input: Params,
  lastHeartbeat: (uuid: string) => string | null,
): { server: Record<string, unknown>; steps: Step[] } {
  const p = ensureParamsValid(input, {
    servers: { optional: true, type: 'array' },
    package: { optional: true, type: 'object' },
    image: { type: 'object' },
    vm: { type: 'object' },
    nic_tag_requirements: { optional: true, type: 'array' },
    nic_tags: { type: 'array' },
  });
  const vm = p.vm as Record<string, unknown>;
  const pkg = (p.package ?? {}) as Record<string, unknown>;
  const only = p.servers as unknown[] | undefined;
  if (only && !only.every(isUuid)) throw invalidParameters([{ field: 'servers', code: 'Invalid', message: 'invalid server UUID' }]);
  const tags = p.nic_tags as unknown[];
  if (!tags.every((t) => typeof t === 'string')) {
    throw invalidParameters([{ field: 'nic_tags', code: 'Invalid', message: 'invalid nic_tag' }]);
  }
  // Each requirement is a list of alternatives; plain nic_tags are one-element lists.
  const reqs: string[][] = Array.isArray(p.nic_tag_requirements)
    ? (p.nic_tag_requirements as unknown[]).map((r) => (Array.isArray(r) ? r.map(String) : [String(r)]))
    : (tags as string[]).map((t) => [t]);
  const ram = Number(vm.ram ?? vm.max_physical_memory ?? pkg.max_physical_memory ?? 0) || 0;
  if (ram <= 0) throw invalidParameters([{ field: 'vm', code: 'Invalid', message: 'vm.ram is required' }]);

  const steps: Step[] = [];
  let cands = servers.list().filter((s) => s.setup === true && s.reserved !== true && !s.headnode);
  if (only) cands = cands.filter((s) => only.includes(s.uuid));
  steps.push({ step: 'Received by DAPI', remaining: cands.map((s) => s.uuid) });

  cands = cands.filter((s) => s.status === 'running');
  steps.push({ step: 'Servers which are currently running', remaining: cands.map((s) => s.uuid) });

  cands = cands.filter((s) => {
    const have = serverNicTags(s);
    return reqs.every((alts) => alts.some((t) => have.has(t)));
  });
  steps.push({ step: 'Servers which have the required nic tags', remaining: cands.map((s) => s.uuid) });

  const free = new Map<string, number>();
  for (const s of cands) free.set(s.uuid, serverCapacity(s, pending.pendingRam(s)).unreserved_ram);
  cands = cands.filter((s) => (free.get(s.uuid) ?? 0) >= ram);
  steps.push({ step: 'Servers with enough unreserved RAM', remaining: cands.map((s) => s.uuid) });

  if (cands.length === 0) {
    const failed = [...steps].reverse().find((s) => s.remaining.length === 0) ?? steps[steps.length - 1]!;
    const reason = `no ${failed.step.charAt(0).toLowerCase()}${failed.step.slice(1)}`.replace(/^no servers/, 'no servers');
    throw new MockcloudError('Conflict', `No compute resources available: ${reason}`, {
      restCode: 'NoAllocatableServersError',
    });
  }
  cands.sort((a, b) => {
    const ra = a.reservoir === true ? 1 : 0;
    const rb = b.reservoir === true ? 1 : 0;
    if (ra !== rb) return ra - rb;
    return (free.get(b.uuid) ?? 0) - (free.get(a.uuid) ?? 0) || Math.random() - 0.5;
  });
  const chosen = cands[0]!;
  const vmUuid = String(vm.vm_uuid ?? vm.uuid ?? '');
  if (vmUuid) pending.add(chosen.uuid, vmUuid, ram);
  steps.push({ step: 'Selected server with the most unreserved RAM', remaining: [chosen.uuid] });
  const rendered = renderServer(chosen, EXTRAS_ALL, lastHeartbeat(chosen.uuid));
  Object.assign(rendered, serverCapacity(chosen, pending.pendingRam(chosen)));
  return { server: rendered, steps };
}
