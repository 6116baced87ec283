/**
 * DAPI's allocator as CNAPI runs it (sdc-designation lib/allocator.js, sdc-cnapi
 * lib/designation.js): the plug-ins of an allocation description run as a pipeline ('pipe'
 * feeds each plug-in what the previous one kept and stops when nothing is left; 'or' tries its
 * members on the same input until one keeps something), each step recorded as
 * `{step, remaining, reasons?}` after a first "Received by DAPI" step. The server with the
 * highest score wins.
 *
 * The allocation description is the one CNAPI's SAPI manifest configures, minus
 * "hard-filter-min-disk" (off unless ALLOC_FILTER_MIN_DISK is set).
 */
import { DEFAULT_DAPI_DEFAULTS, PLUGINS, type DapiDefaults, type DapiServer, type Obj, type Plugin, type PluginOpts, type Reasons, type Ticket } from './algorithms.js';

type Description = (string | Description)[];

export const ALLOCATION_DESCRIPTION: Description = [
  'pipe',
  'hard-filter-setup',
  'hard-filter-running',
  'hard-filter-os',
  'hard-filter-invalid-servers',
  'hard-filter-force-failure',
  'hard-filter-virtual-servers',
  'hard-filter-zpool-encryption',
  'hard-filter-volumes-from',
  'hard-filter-reserved',
  'hard-filter-min-free-disk',
  'hard-filter-vlans',
  'hard-filter-platform-versions',
  'hard-filter-feature-min-platform',
  'hard-filter-traits',
  'hard-filter-headnode',
  'override-overprovisioning',
  'hard-filter-overprovision-ratios',
  'load-server-vms',
  'calculate-ticketed-vms',
  'hard-filter-capness',
  'hard-filter-vm-count',
  'hard-filter-hvm',
  'calculate-server-unreserved',
  'hard-filter-min-ram',
  'hard-filter-min-cpu',
  'calculate-affinity',
  'hard-filter-locality-hints',
  'hard-filter-owners-servers',
  ['or', 'hard-filter-reservoir', 'identity'],
  ['or', 'hard-filter-large-servers', 'identity'],
  'soft-filter-locality-hints',
  'score-unreserved-ram',
  'score-unreserved-disk',
  'score-num-owner-zones',
  'score-current-platform',
  'score-next-reboot',
  'score-uniform-random',
];

/** What DAPI runs to compute spare capacity (GET /servers/:uuid, extras=capacity, /capacity). */
export const CAPACITY_DESCRIPTION: Description = [
  'pipe',
  'hard-filter-setup',
  'hard-filter-running',
  'hard-filter-invalid-servers',
  'load-server-vms',
  'override-overprovisioning',
  'calculate-server-unreserved',
];

export interface Step {
  step: string;
  remaining: string[];
  reasons?: Reasons;
}

interface Trace {
  plugins: Plugin[];
  remaining: string[][];
  reasons: Reasons[];
}

/** Run a description over `servers`; returns the survivors and what each plug-in did. */
function dispatch(desc: Description, initial: DapiServer[], opts: PluginOpts, trace: Trace): DapiServer[] {
  const [command, ...members] = desc;
  let current: DapiServer[] = command === 'pipe' ? initial : [];
  for (const member of members) {
    if (command === 'pipe' && current.length === 0) break;
    if (command === 'or' && current.length > 0) break;
    const input = command === 'pipe' ? current : initial;
    if (Array.isArray(member)) {
      current = dispatch(member, input, opts, trace);
    } else {
      const plugin = PLUGINS[member as string];
      if (!plugin) throw new Error(`unknown DAPI plug-in ${String(member)}`);
      const { servers, reasons } = plugin.run(input, opts);
      trace.plugins.push(plugin);
      trace.remaining.push(servers.map((s) => s.uuid));
      trace.reasons.push(reasons);
      current = servers;
    }
  }
  return current;
}

function summary(initial: DapiServer[], trace: Trace): Step[] {
  const steps: Step[] = [{ step: 'Received by DAPI', remaining: initial.map((s) => s.uuid) }];
  trace.plugins.forEach((p, i) => {
    const step: Step = { step: p.name, remaining: trace.remaining[i]! };
    const reasons = trace.reasons[i]!;
    if (Object.keys(reasons).length > 0) step.reasons = reasons;
    steps.push(step);
  });
  return steps;
}

/**
 * A package's overprovision attributes under the names the plug-ins use; a package without
 * any counts as not overprovisioning RAM (allocator.js _massagePkgData).
 */
function massagePackage(pkg: Obj): Obj {
  const n = (v: unknown): number => Number(v);
  if (pkg.overprovision_cpu) pkg.overprovision_cpu = n(pkg.overprovision_cpu);
  if (pkg.overprovision_memory) pkg.overprovision_ram = n(pkg.overprovision_memory);
  if (pkg.overprovision_storage) pkg.overprovision_disk = n(pkg.overprovision_storage);
  if (pkg.overprovision_network) pkg.overprovision_net = n(pkg.overprovision_network);
  if (pkg.overprovision_io) pkg.overprovision_io = n(pkg.overprovision_io);
  delete pkg.overprovision_memory;
  delete pkg.overprovision_storage;
  delete pkg.overprovision_network;
  if (!(pkg.overprovision_cpu || pkg.overprovision_ram || pkg.overprovision_disk || pkg.overprovision_io || pkg.overprovision_net)) {
    pkg.overprovision_ram = 1.0;
  }
  return pkg;
}

export interface AllocatorOptions {
  defaults?: Partial<DapiDefaults>;
  /** load-server-vms: the VMs DAPI counts on a server. */
  getServerVms?: (server: DapiServer) => Obj[];
}

export class Allocator {
  readonly defaults: DapiDefaults;
  private readonly getServerVms: ((server: DapiServer) => Obj[]) | undefined;

  constructor(opts: AllocatorOptions = {}) {
    this.defaults = { ...DEFAULT_DAPI_DEFAULTS, ...opts.defaults };
    this.getServerVms = opts.getServerVms;
  }

  /** One allocation run over `servers` (mutated as DAPI mutates them). */
  allocate(
    servers: DapiServer[],
    request: { vm: Obj; img: Obj; pkg?: Obj; tickets: Ticket[]; affinity?: { locality?: Obj; error?: string } },
  ): { server: DapiServer | undefined; steps: Step[] } {
    const opts: PluginOpts = {
      defaults: this.defaults,
      vm: request.vm,
      img: request.img,
      tickets: request.tickets,
      ...(request.affinity ? { affinity: request.affinity } : {}),
      ...(request.pkg ? { pkg: massagePackage(request.pkg) } : {}),
      ...(this.getServerVms ? { getServerVms: this.getServerVms } : {}),
    };
    for (const s of servers) s.score = 0;
    const trace: Trace = { plugins: [], remaining: [], reasons: [] };
    const left = dispatch(ALLOCATION_DESCRIPTION, servers, opts, trace);
    const server = left.length > 1 ? left.reduce((a, b) => (a.score > b.score ? a : b)) : left[0];
    return { server, steps: summary(servers, trace) };
  }

  /** Spare capacity per server (RAM and disk in MiB, CPU in centi-CPUs), of the servers that qualify. */
  serverCapacity(servers: DapiServer[]): { capacities: Record<string, { cpu: number; ram: number; disk: number }>; reasons: Reasons } {
    const opts: PluginOpts = { defaults: this.defaults, ...(this.getServerVms ? { getServerVms: this.getServerVms } : {}) };
    for (const s of servers) s.score = 0;
    const trace: Trace = { plugins: [], remaining: [], reasons: [] };
    const left = dispatch(CAPACITY_DESCRIPTION, servers, opts, trace);
    const capacities: Record<string, { cpu: number; ram: number; disk: number }> = {};
    for (const s of left) capacities[s.uuid] = { cpu: s.unreserved_cpu ?? 0, ram: s.unreserved_ram ?? 0, disk: s.unreserved_disk ?? 0 };
    const reasons: Reasons = {};
    for (const r of trace.reasons) Object.assign(reasons, r);
    return { capacities, reasons };
  }
}
