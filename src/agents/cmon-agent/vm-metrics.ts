/**
 * `GET /v1/<vm_uuid>/metrics`: the metric families of the real cmon-agent's VM collectors, in
 * its order (collectors-common/time, then collectors-vm: cpucap, link, memcap, tcp,
 * triton_core, zfs, zone_misc, zone_vfs), each preceded by its three meta gauges. Values come
 * from the VM's size (ram, swap, cpu_cap / vcpus, quota, NICs, snapshots) and its uptime; every
 * counter grows monotonically across scrapes (CounterBank).
 */
import type { Vm } from '../../vmadm/types.js';
import type { CounterBank } from './counters.js';
import { collectorMeta, type MetricFamily, type MetricType, type Sample } from './prometheus.js';
import { GiB, MiB, unit, wobble } from './shape.js';

export interface VmMetricsInput {
  vm: Vm;
  now: number;
  counters: CounterBank;
  /** The real agent adds the triton_core collector for core zones (CMON says so in its header). */
  isCoreZone: boolean;
}

interface CounterSpec {
  name: string;
  help: string;
  rate: number;
  labels?: readonly (readonly [string, string])[];
  /** Whole units (packets, bytes, ns); otherwise fractional (seconds). */
  integer?: boolean;
}

/** When the VM last booted: boot_timestamp, else its last change, else now. */
export function bootTimeOf(vm: Vm, now: number): number {
  for (const t of [vm.boot_timestamp, vm.last_modified, vm.create_timestamp]) {
    const ms = typeof t === 'string' ? Date.parse(t) : NaN;
    if (Number.isFinite(ms) && ms <= now) return ms;
  }
  return now;
}

export function vmFamilies(input: VmMetricsInput): MetricFamily[] {
  const { vm, now } = input;
  const id = vm.uuid;
  const ramBytes = positive(vm.max_physical_memory, positive(vm.ram, 256)) * MiB;
  const swapBytes = positive(vm.max_swap, ramBytes / MiB) * MiB;
  const cpuCap = positive(vm.cpu_cap, 0);
  const cpus = cpuCap > 0 ? cpuCap / 100 : positive(vm.vcpus, 1);
  const util = (0.05 + 0.25 * unit(id, 'cpu')) * wobble(id, 'cpu', now);
  const bootMs = bootTimeOf(vm, now);

  // All counters of the VM advance together, so one scrape sees one consistent instant.
  const specs: CounterSpec[] = [];
  const add = (s: CounterSpec): CounterSpec => (specs.push(s), s);
  const nics = (vm.nics ?? []).filter((n) => n && typeof n === 'object');

  const cpucap = cpuCap > 0
    ? {
        aboveBase: add({ name: 'cpucap_above_base_seconds_total', help: 'Time (in seconds) a zone has spent over the baseline', rate: Math.max(0, util - 0.15) }),
        above: add({ name: 'cpucap_above_seconds_total', help: 'Time (in seconds) a zone has spent over its cpu_cap', rate: util > 0.28 ? 0.01 : 0 }),
        below: add({ name: 'cpucap_below_seconds_total', help: 'Time (in seconds) a zone has spent under its cpu_cap', rate: 1 }),
      }
    : undefined;

  const link = nics.map((nic, i) => {
    const iface = typeof nic.interface === 'string' ? nic.interface.replace(/^[^\d]+/, 'vnic') : `vnic${i}`;
    const labels: [string, string][] = [['interface', iface]];
    if (nic.nic_tag !== undefined || nic.network_uuid !== undefined) {
      labels.push(['nic_tag', String(nic.nic_tag)], ['network_uuid', String(nic.network_uuid)]);
    }
    const salt = `nic${i}`;
    const bytesIn = (20_000 + 2_000_000 * unit(id, `${salt}/in`)) * wobble(id, `${salt}/in`, now);
    const bytesOut = (10_000 + 1_000_000 * unit(id, `${salt}/out`)) * wobble(id, `${salt}/out`, now);
    const pktSize = 400 + 1000 * unit(id, `${salt}/pkt`);
    return {
      packetsIn: add({ name: 'net_agg_packets_in', help: 'Aggregate inbound packets', rate: bytesIn / pktSize, labels, integer: true }),
      bytesOut: add({ name: 'net_agg_bytes_out', help: 'Aggregate outbound bytes', rate: bytesOut, labels, integer: true }),
      packetsOut: add({ name: 'net_agg_packets_out', help: 'Aggregate outbound packets', rate: bytesOut / pktSize, labels, integer: true }),
      bytesIn: add({ name: 'net_agg_bytes_in', help: 'Aggregate inbound bytes', rate: bytesIn, labels, integer: true }),
    };
  });

  const anonFail = add({ name: 'mem_anon_alloc_fail', help: 'Anonymous allocation failure count', rate: 0, integer: true });

  const tcpRate = (salt: string, base: number): number => base * (0.5 + unit(id, `tcp/${salt}`)) * wobble(id, `tcp/${salt}`, now, 0.3);
  const tcp = [
    add({ name: 'tcp_failed_connection_attempt_count', help: 'Failed TCP connection attempts', rate: tcpRate('fail', 0.01), integer: true }),
    add({ name: 'tcp_retransmitted_segment_count', help: 'Retransmitted TCP segments', rate: tcpRate('retrans', 0.5), integer: true }),
    add({ name: 'tcp_duplicate_ack_count', help: 'Duplicate TCP ACK count', rate: tcpRate('dupack', 0.3), integer: true }),
    add({ name: 'tcp_listen_drop_count', help: 'TCP listen drops. Connection refused because backlog full', rate: 0, integer: true }),
    add({ name: 'tcp_listen_drop_Qzero_count', help: 'Total # of connections refused due to half-open queue (q0) full', rate: 0, integer: true }),
    add({ name: 'tcp_half_open_drop_count', help: 'TCP connection dropped from a full half-open queue', rate: 0, integer: true }),
    add({ name: 'tcp_retransmit_timeout_drop_count', help: 'TCP connection dropped due to retransmit timeout', rate: tcpRate('rtodrop', 0.001), integer: true }),
    add({ name: 'tcp_active_open_count', help: 'TCP active open connections', rate: tcpRate('active', 0.2), integer: true }),
    add({ name: 'tcp_passive_open_count', help: 'TCP passive open connections', rate: tcpRate('passive', 0.5), integer: true }),
  ];

  const cpuNs = util * cpus * 1e9;
  const cpuUser = add({ name: 'cpu_user_usage', help: 'User CPU utilization in nanoseconds', rate: cpuNs * 0.7, integer: true });
  const cpuSys = add({ name: 'cpu_sys_usage', help: 'System CPU usage in nanoseconds', rate: cpuNs * 0.25, integer: true });
  const cpuWait = add({ name: 'cpu_wait_time', help: 'CPU wait time in nanoseconds', rate: cpuNs * 0.05, integer: true });

  const ioRate = (1_000 + 500_000 * unit(id, 'io')) * wobble(id, 'io', now);
  const vfs = [
    add({ name: 'vfs_bytes_read_count', help: 'VFS number of bytes read', rate: ioRate, integer: true }),
    add({ name: 'vfs_bytes_written_count', help: 'VFS number of bytes written', rate: ioRate * 0.6, integer: true }),
    add({ name: 'vfs_read_operation_count', help: 'VFS number of read operations', rate: ioRate / 4096, integer: true }),
    add({ name: 'vfs_write_operation_count', help: 'VFS number of write operations', rate: (ioRate * 0.6) / 8192, integer: true }),
    add({ name: 'vfs_wait_time_count', help: 'VFS cumulative wait (pre-service) time', rate: (ioRate / 4096) * 2e5, integer: true }),
    add({ name: 'vfs_wait_length_time_count', help: 'VFS cumulative wait length*time product', rate: (ioRate / 4096) * 3e5, integer: true }),
    add({ name: 'vfs_run_time_count', help: 'VFS cumulative run (pre-service) time', rate: (ioRate / 4096) * 1e6, integer: true }),
    add({ name: 'vfs_run_length_time_count', help: 'VFS cumulative run length*time product', rate: (ioRate / 4096) * 1.2e6, integer: true }),
  ];

  const rates = new Map<string, number>();
  for (const s of specs) rates.set(counterKey(s), s.rate);
  const values = input.counters.advance(`vm:${id}`, now, bootMs, rates);
  const value = (s: CounterSpec): number => {
    const v = values.get(counterKey(s)) ?? 0;
    return s.integer ? Math.floor(v) : round(v, 6);
  };
  const counter = (s: CounterSpec): MetricFamily => family(s.name, s.help, 'counter', [{ value: value(s), ...(s.labels ? { labels: s.labels } : {}) }]);

  const out: MetricFamily[] = [];
  const collector = (name: string, available: boolean, build: () => MetricFamily[]): void => {
    const t0 = performance.now();
    const families = available ? build() : [];
    out.push(...collectorMeta(name, available, round((performance.now() - t0) / 1000, 9)), ...families);
  };

  collector('time', true, () => [family('time_of_day', 'System time in seconds since epoch', 'counter', [{ value: now }])]);

  collector('cpucap', cpucap !== undefined, () => {
    const c = cpucap!;
    const usagePct = round(util * cpuCap, 2);
    return [
      counter(c.aboveBase),
      counter(c.above),
      family('cpucap_baseline_percentage', 'The "normal" CPU utilization expected for a zone with this cpu_cap (percentage of a single CPU)', 'gauge', [{ value: Math.round(cpuCap * 0.3) }]),
      counter(c.below),
      family('cpucap_burst_limit_seconds', 'The limit on the number of seconds a zone can burst over its cpu_cap before the effective cap is lowered to the baseline', 'gauge', [{ value: 0 }]),
      family('cpucap_effective_percentage', 'Shows which cap is being used, the baseline value or the burst value', 'gauge', [{ value: cpuCap }]),
      family('cpucap_max_usage_percentage', 'The highest CPU utilization the zone has seen since booting (percentage of a single CPU)', 'gauge', [{ value: Math.round(cpuCap * 0.9) }]),
      family('cpucap_waiting_threads_count', 'The number of threads put on the wait queue due to the zone being over its cap', 'gauge', [{ value: 0 }]),
      family('cpucap_cur_usage_percentage', 'Current CPU utilization of the zone (percentage of a single CPU)', 'gauge', [{ value: usagePct }]),
      family('cpucap_limit_percentage', 'The cpu_cap limit (percentage of a single CPU)', 'gauge', [{ value: cpuCap }]),
    ];
  });

  collector('link', link.length > 0, () => {
    const byName = (pick: (l: (typeof link)[number]) => CounterSpec): MetricFamily => {
      const first = pick(link[0]!);
      return family(first.name, first.help, 'counter', link.map((l) => ({ value: value(pick(l)), labels: pick(l).labels! })));
    };
    return [byName((l) => l.packetsIn), byName((l) => l.bytesOut), byName((l) => l.packetsOut), byName((l) => l.bytesIn)];
  });

  collector('memcap', true, () => {
    const used = Math.round(ramBytes * (0.3 + 0.4 * unit(id, 'mem')) * wobble(id, 'mem', now, 0.1));
    const swapUsed = Math.min(swapBytes, Math.round(used * (0.1 + 0.3 * unit(id, 'swap'))));
    return [
      family('mem_agg_usage', 'Aggregate memory usage in bytes', 'gauge', [{ value: Math.min(used, ramBytes) }]),
      counter(anonFail),
      family('mem_limit', 'Memory limit in bytes', 'gauge', [{ value: ramBytes }]),
      family('mem_swap', 'Swap in bytes', 'gauge', [{ value: swapUsed }]),
      family('mem_swap_limit', 'Swap limit in bytes', 'gauge', [{ value: swapBytes }]),
    ];
  });

  collector('tcp', true, () => [
    ...tcp.map(counter),
    family('tcp_current_established_connections_total', 'TCP total established connections', 'gauge', [{ value: Math.round(2 + 40 * unit(id, 'tcp/estab') * wobble(id, 'tcp/estab', now)) }]),
  ]);

  // The real collector asks a core zone for its own metrics; a mock zone has none to give.
  if (input.isCoreZone) collector('triton_core', false, () => []);

  collector('zfs', true, () => zfsFamilies(vm, now));

  collector('zone_misc', true, () => [
    counter(cpuUser),
    counter(cpuSys),
    counter(cpuWait),
    family('load_average', 'Load average', 'gauge', [{ value: round(util * cpus * 1.2, 8) }]),
  ]);

  collector('zone_vfs', true, () => [
    ...vfs.map(counter),
    family('vfs_elements_wait_state', 'VFS number of elements in wait state', 'gauge', [{ value: 0 }]),
    family('vfs_elements_run_state', 'VFS number of elements in run state', 'gauge', [{ value: 0 }]),
  ]);

  return out;
}

/** The zone root dataset `zones/<uuid>`, as `zfs list -Hpo ...` would describe it. */
function zfsFamilies(vm: Vm, now: number): MetricFamily[] {
  const id = vm.uuid;
  const diskBytes = (vm.disks ?? []).reduce((sum, d) => sum + positive(d?.size, 0) * MiB, 0);
  const quotaBytes = positive(vm.quota, 0) * GiB || diskBytes;
  const capacity = quotaBytes > 0 ? quotaBytes : 100 * GiB;
  const used = Math.round(capacity * (0.05 + 0.5 * unit(id, 'zfs')) * wobble(id, 'zfs', now, 0.02));
  const snapshots = Array.isArray(vm.snapshots) ? vm.snapshots.length : 0;
  const bySnapshots = snapshots * Math.round(16 * MiB * (1 + unit(id, 'zfs/snap')));
  const byDataset = Math.max(0, used - bySnapshots);
  const ratio = round(1 + unit(id, 'zfs/ratio') * 1.5, 2);
  const g = (prop: string, help: string, v: number): MetricFamily => family(`zfs_${prop}`, help, 'gauge', [{ value: v }]);
  return [
    g('available', 'zfs space available in bytes', Math.max(0, capacity - used)),
    g('used', 'zfs space used in bytes', used),
    g('logicalused', 'zfs space logically used in bytes', Math.round(used * ratio)),
    g('recordsize', 'suggested zfs data block size in bytes', 131072),
    g('quota', 'zfs dataset quota in bytes', quotaBytes),
    g('compressratio', 'zfs compression ratio achieved for the used property', ratio),
    g('refcompressratio', 'zfs compression ratio achieved for the referenced property', ratio),
    g('referenced', 'zfs data accessible by dataset in bytes', byDataset),
    g('logicalreferenced', 'zfs data logically accessible by dataset in bytes', Math.round(byDataset * ratio)),
    g('usedbydataset', 'zfs data used by the dataset itself in bytes', byDataset),
    g('usedbysnapshots', 'zfs data used by snapshots in bytes', bySnapshots),
  ];
}

export function family(name: string, help: string, type: MetricType, samples: Sample[]): MetricFamily {
  return { name, help, type, samples };
}

function counterKey(s: CounterSpec): string {
  return s.labels ? `${s.name}{${s.labels.map(([k, v]) => `${k}=${v}`).join(',')}}` : s.name;
}

function positive(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback;
}

export function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}
