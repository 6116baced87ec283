/**
 * One `docker stats` record as sdc-cn-agent lib/backends/smartos/bin/docker-stats.js builds it
 * from a kstat read, here from the VM's model instead of kstats:
 *
 * - `memory_stats` from zone_memory_cap: usage = rss, limit = physcap (max_physical_memory),
 *   swap / total_swap from max_swap, inactive_anon = total_swap - swap, the rest 0;
 * - `cpu_stats` from zone_caps (`cpucaps_zone_<id>`, only with a cpu_cap): total_usage adds
 *   the current usage percentage to the previous record's, system_cpu_usage adds 100; without a
 *   cap, from zone_misc: user + sys + wait-queue nanoseconds, system_cpu_usage adding 1e9 per
 *   record; `precpu_stats` is the previous record's `cpu_stats`;
 * - network from each NIC's `net` kstat: `network` (one sum) for clients older than API 1.21,
 *   else `networks` keyed by interface (the real code restarts that object per NIC, so only
 *   the last NIC is there);
 * - `blkio_stats` always, with empty lists.
 * A VM that is not running (or not there) has no zone kstats: the record is `read` and
 * `blkio_stats` only.
 *
 * The load figures follow the same per-VM shapes as the mock cmon-agent's (cmon-agent/shape.ts),
 * so CMON and docker stats tell one story.
 */
import type { Vm } from '../../../vmadm/types.js';
import { unit, wobble, MiB } from '../../cmon-agent/shape.js';

const UPDATE_FREQUENCY_NS = 1_000_000_000;

export interface CpuStats {
  cpu_usage: { total_usage: number; percpu_usage: number[]; usage_in_kernelmode: number; usage_in_usermode: number };
  system_cpu_usage: number;
  throttling_data: { periods: number; throttled_periods: number; throttled_time: number };
}

export interface DockerStatsRecord {
  read: string;
  network?: NicStats;
  networks?: Record<string, NicStats>;
  memory_stats?: Record<string, unknown>;
  cpu_stats?: CpuStats;
  precpu_stats?: CpuStats;
  blkio_stats: Record<string, unknown[]>;
}

interface NicStats {
  rx_bytes: number;
  rx_packets: number;
  rx_errors: number;
  rx_dropped: number;
  tx_bytes: number;
  tx_packets: number;
  tx_errors: number;
  tx_dropped: number;
}

function emptyCpu(): CpuStats {
  return {
    cpu_usage: { total_usage: 0, percpu_usage: [], usage_in_kernelmode: 0, usage_in_usermode: 0 },
    system_cpu_usage: 0,
    throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 },
  };
}

const MEMORY_STAT_KEYS = [
  'active_anon', 'active_file', 'cache', 'hierarchical_memory_limit', 'hierarchical_memsw_limit', 'inactive_anon',
  'inactive_file', 'mapped_file', 'pgfault', 'pgmajfault', 'pgpgin', 'pgpgout', 'rss', 'rss_huge', 'swap',
  'total_active_anon', 'total_active_file', 'total_cache', 'total_inactive_anon', 'total_inactive_file',
  'total_mapped_file', 'total_pgfault', 'total_pgmajfault', 'total_pgpgin', 'total_pgpgout', 'total_rss',
  'total_rss_huge', 'total_swap', 'total_unevictable', 'total_writeback', 'unevictable', 'writeback',
] as const;

function positive(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback;
}

function bootMs(vm: Vm, now: number): number {
  for (const t of [vm.boot_timestamp, vm.last_modified, vm.create_timestamp]) {
    const ms = typeof t === 'string' ? Date.parse(t) : NaN;
    if (Number.isFinite(ms) && ms <= now) return ms;
  }
  return now;
}

export function dockerStatsRecord(
  vm: Vm | undefined,
  opts: { now: number; last: DockerStatsRecord | null; clientApiVersion?: number | undefined },
): DockerStatsRecord {
  const { now, last } = opts;
  const stats: DockerStatsRecord = { read: new Date(now).toISOString(), blkio_stats: {} };
  const running = vm !== undefined && vm.zone_state === 'running';
  if (running) {
    const id = vm.uuid;
    const uptimeSec = Math.max(0, (now - bootMs(vm, now)) / 1000);

    // net kstats, one per VNIC.
    const nics = (vm.nics ?? []).filter((n) => n && typeof n === 'object');
    nics.forEach((nic, i) => {
      const iface = typeof nic.interface === 'string' ? nic.interface : `net${i}`;
      const inRate = 20_000 + 2_000_000 * unit(id, `nic${i}/in`);
      const outRate = 10_000 + 1_000_000 * unit(id, `nic${i}/out`);
      const pkt = 400 + 1000 * unit(id, `nic${i}/pkt`);
      let n: NicStats;
      if (opts.clientApiVersion !== undefined && opts.clientApiVersion >= 1.21) {
        stats.networks = {};
        n = stats.networks[iface] = zeroNic();
      } else {
        n = stats.network ??= zeroNic();
      }
      n.rx_bytes += Math.floor(inRate * uptimeSec);
      n.rx_packets += Math.floor((inRate / pkt) * uptimeSec);
      n.tx_bytes += Math.floor(outRate * uptimeSec);
      n.tx_packets += Math.floor((outRate / pkt) * uptimeSec);
    });

    // zone_caps / zone_misc.
    const cpuCap = positive(vm.cpu_cap, 0);
    const cpus = cpuCap > 0 ? cpuCap / 100 : positive(vm.vcpus, 1);
    const util = (0.05 + 0.25 * unit(id, 'cpu')) * wobble(id, 'cpu', now);
    const cpu = emptyCpu();
    stats.cpu_stats = cpu;
    stats.precpu_stats = last?.cpu_stats ?? emptyCpu();
    const nsec = util * cpus * 1e9 * uptimeSec;
    cpu.cpu_usage.usage_in_usermode = Math.floor(nsec * 0.7);
    cpu.cpu_usage.usage_in_kernelmode = Math.floor(nsec * 0.25);
    if (cpuCap > 0) {
      cpu.cpu_usage.total_usage = (last?.cpu_stats?.cpu_usage.total_usage ?? 0) + Math.round(util * cpuCap);
      cpu.system_cpu_usage = (last?.cpu_stats?.system_cpu_usage ?? 0) + 100;
    } else {
      cpu.cpu_usage.total_usage = Math.floor(nsec);
      cpu.system_cpu_usage = (last?.cpu_stats?.system_cpu_usage ?? 0) + UPDATE_FREQUENCY_NS;
    }
    cpu.cpu_usage.percpu_usage = [cpu.cpu_usage.total_usage];

    // zone_memory_cap.
    const ramBytes = positive(vm.max_physical_memory, positive(vm.ram, 256)) * MiB;
    const swapCap = positive(vm.max_swap, ramBytes / MiB) * MiB;
    const rss = Math.min(ramBytes, Math.round(ramBytes * (0.3 + 0.4 * unit(id, 'mem')) * wobble(id, 'mem', now, 0.1)));
    const swap = Math.min(swapCap, Math.round(rss * (0.1 + 0.3 * unit(id, 'swap'))));
    const memStats: Record<string, number> = Object.fromEntries(MEMORY_STAT_KEYS.map((k) => [k, 0]));
    memStats.swap = swap;
    memStats.total_active_anon = swap;
    memStats.total_swap = swapCap;
    memStats.inactive_anon = Math.max(0, swapCap - swap);
    stats.memory_stats = { usage: rss, max_usage: 0, stats: memStats, failcnt: 0, limit: ramBytes };
  }
  stats.blkio_stats = {
    io_service_bytes_recursive: [],
    io_serviced_recursive: [],
    io_queue_recursive: [],
    io_service_time_recursive: [],
    io_wait_time_recursive: [],
    io_merged_recursive: [],
    io_time_recursive: [],
    sectors_recursive: [],
  };
  return stats;
}

function zeroNic(): NicStats {
  return { rx_bytes: 0, rx_packets: 0, rx_errors: 0, rx_dropped: 0, tx_bytes: 0, tx_packets: 0, tx_errors: 0, tx_dropped: 0 };
}
