/**
 * `GET /v1/gz/metrics`: the families of the real cmon-agent's global-zone collectors, in its
 * order (collectors-common/time, then collectors-gz: arcstats, cpu_info, cpu_util, ntp, zpool),
 * each with its meta gauges. Values come from the CN's sysinfo (memory, cores, zpool size, boot
 * time) and the load of its running VMs; counters grow monotonically across scrapes.
 * A mock CN runs no ntpd: the ntp collector reports itself unavailable, as on a CN without peers.
 */
import { sysinfoHardware } from '../../mockcn/sysinfo-file.js';
import type { MockCn } from '../../mockcn/types.js';
import type { CounterBank } from './counters.js';
import { collectorMeta, type MetricFamily } from './prometheus.js';
import { GiB, MiB, unit, wobble } from './shape.js';
import { family, round } from './vm-metrics.js';

export interface GzMetricsInput {
  cn: MockCn;
  now: number;
  counters: CounterBank;
}

export function gzFamilies(input: GzMetricsInput): MetricFamily[] {
  const { cn, now } = input;
  const id = cn.uuid;
  const hw = sysinfoHardware(cn.sysinfo);
  const memBytes = hw.memoryBytes || 64 * GiB;
  const poolBytes = hw.poolSizeBytes || 1024 * GiB;
  const cores = Math.max(1, Math.floor(Number(cn.sysinfo['CPU Total Cores']) || 1));
  const bootParsed = hw.bootTime ? Date.parse(hw.bootTime) : NaN;
  const bootMs = Number.isFinite(bootParsed) && bootParsed <= now ? bootParsed : now;

  // The VMs' demand drives the CN: CPU busy share, ARC traffic, pool allocation.
  let vmCpus = 0;
  let vmBytes = 0;
  for (const vm of cn.vms.list({ include_dni: true })) {
    const quota = typeof vm.quota === 'number' && vm.quota > 0 ? vm.quota * GiB : 0;
    vmBytes += quota * (0.05 + 0.5 * unit(vm.uuid, 'zfs'));
    if (vm.state !== 'running') continue;
    const cap = typeof vm.cpu_cap === 'number' && vm.cpu_cap > 0 ? vm.cpu_cap / 100 : typeof vm.vcpus === 'number' ? vm.vcpus : 1;
    vmCpus += cap * (0.05 + 0.25 * unit(vm.uuid, 'cpu'));
  }
  const busy = Math.min(0.95, 0.01 + vmCpus / cores) * wobble(id, 'cpu', now, 0.2);

  const rates = new Map<string, number>();
  for (let cpu = 0; cpu < cores; cpu++) {
    const skew = 0.8 + 0.4 * unit(id, `cpu${cpu}`);
    const b = Math.min(0.99, busy * skew);
    rates.set(`idle/${cpu}`, 1 - b);
    rates.set(`kernel/${cpu}`, b * 0.3);
    rates.set(`user/${cpu}`, b * 0.7);
    rates.set(`dtrace/${cpu}`, 0);
  }
  const arcOps = (200 + 5000 * busy) * wobble(id, 'arc', now, 0.3);
  rates.set('arc/hits', arcOps * 0.95);
  rates.set('arc/misses', arcOps * 0.05);
  rates.set('arc/demand_data_hits', arcOps * 0.6);
  rates.set('arc/demand_data_misses', arcOps * 0.03);
  const values = input.counters.advance(`gz:${id}`, now, bootMs, rates);
  const v = (key: string, integer = true): number => {
    const x = values.get(key) ?? 0;
    return integer ? Math.floor(x) : round(x, 6);
  };

  const out: MetricFamily[] = [];
  const collector = (name: string, available: boolean, build: () => MetricFamily[]): void => {
    const t0 = performance.now();
    const families = available ? build() : [];
    out.push(...collectorMeta(name, available, round((performance.now() - t0) / 1000, 9)), ...families);
  };

  collector('time', true, () => [family('time_of_day', 'System time in seconds since epoch', 'counter', [{ value: now }])]);

  collector('arcstats', true, () => {
    const target = Math.round(memBytes * (0.2 + 0.2 * unit(id, 'arc')));
    const size = Math.round(target * (0.9 + 0.1 * wobble(id, 'arcsize', now, 0.5)));
    const meta = Math.round(size * 0.25);
    const g = (name: string, help: string, value: number): MetricFamily => family(name, help, 'gauge', [{ value }]);
    const c = (name: string, help: string, key: string): MetricFamily => family(name, help, 'counter', [{ value: v(key) }]);
    return [
      g('arcstats_anon_size_bytes', 'ARC anonymous size', Math.round(size * 0.01)),
      g('arcstats_arc_meta_limit_bytes', 'ARC metadata limit', Math.round(memBytes * 0.25)),
      g('arcstats_arc_meta_used_bytes', 'ARC metadata used', meta),
      g('arcstats_target_cache_size_bytes', 'ARC target cache size', target),
      g('arcstats_max_target_cache_size_bytes', 'ARC maximum target cache size', Math.round(memBytes * 0.8)),
      g('arcstats_min_target_cache_size_bytes', 'ARC minimum target cache size', Math.round(memBytes / 32)),
      g('arcstats_compressed_size_bytes', 'ARC compressed size', Math.round(size * 0.7)),
      g('arcstats_data_size_bytes', 'Number of bytes consumed by ARC buffers backing on disk data', size - meta),
      c('arcstats_demand_data_hits_total', 'ARC demand data hits', 'arc/demand_data_hits'),
      c('arcstats_demand_data_misses_total', 'ARC demand data misses', 'arc/demand_data_misses'),
      c('arcstats_hits_total', 'ARC hits', 'arc/hits'),
      c('arcstats_misses_total', 'ARC misses', 'arc/misses'),
      g('arcstats_metadata_size_bytes', 'ARC metadata size', meta),
      g('arcstats_size_bytes', 'ARC size', size),
    ];
  });

  collector('cpu_info', true, () => [family('cpu_info_model', 'CPU model', 'gauge', [{ value: 85 }])]);

  collector('cpu_util', true, () => {
    const perCpu = (kind: string, name: string, help: string): MetricFamily =>
      family(name, help, 'counter', Array.from({ length: cores }, (_, cpu) => ({ value: v(`${kind}/${cpu}`, false), labels: [['cpu_id', String(cpu)]] as const })));
    return [
      perCpu('idle', 'cpu_idle_seconds_total', 'CPU idle time in seconds'),
      perCpu('kernel', 'cpu_kernel_seconds_total', 'CPU kernel time in seconds'),
      perCpu('user', 'cpu_user_seconds_total', 'CPU user time in seconds'),
      perCpu('dtrace', 'cpu_dtrace_seconds_total', 'CPU dtrace time in seconds'),
    ];
  });

  collector('ntp', false, () => []);

  collector('zpool', true, () => {
    const pool: [string, string][] = [['pool', hw.poolName]];
    const allocated = Math.min(poolBytes, Math.round(8 * GiB + vmBytes + 512 * MiB * unit(id, 'pool')));
    return [
      family('zpool_allocated_bytes', 'Amount of storage space used withing the pool', 'gauge', [{ value: allocated, labels: pool }]),
      family('zpool_fragmentation_percent', 'Amount of fragmentation in the pool', 'gauge', [{ value: Math.round(2 + 20 * unit(id, 'frag')), labels: pool }]),
      family('zpool_health_status', 'The current health of the pool (0 = ONLINE, 1 = DEGRADED, 2 = FAULTED, 3 = OFFLINE, 4 = REMOVED, 5 = UNAVAIL, -1 = UNKNOWN)', 'gauge', [{ value: 0, labels: pool }]),
      family('zpool_size_bytes', 'Total size of the pool', 'gauge', [{ value: poolBytes, labels: pool }]),
    ];
  });

  return out;
}
