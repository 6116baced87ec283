/**
 * The daemon process's own figures: CPU, memory, heap and event-loop delay. Read at scrape
 * time, under the names prom-client's default metrics give them where there is one; not
 * prom-client's `collectDefaultMetrics`, whose event-loop monitor and GC observer cannot be
 * stopped (a daemon's `stop()` releases everything it started). The event-loop monitor starts
 * at the first scrape, so a daemon nobody scrapes pays nothing for it.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, type Registry } from 'prom-client';

/** The monitor's sampling interval; what it measures beyond it is the loop's delay. */
const LOOP_RESOLUTION_MS = 20;

export class ProcessMetrics {
  private loop: IntervalHistogram | undefined;
  private stopped = false;

  constructor(registry: Registry) {
    const registers = [registry];
    const startSeconds = Math.round(performance.timeOrigin / 1000);
    new Gauge({
      name: 'process_start_time_seconds',
      help: 'Start time of the process since unix epoch in seconds.',
      registers,
      collect() {
        this.set(startSeconds);
      },
    });
    const cpu = (name: string, help: string, pick: (u: NodeJS.CpuUsage) => number): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(pick(process.cpuUsage()) / 1e6);
        },
      });
    };
    cpu('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', (u) => u.user);
    cpu('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', (u) => u.system);
    cpu('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', (u) => u.user + u.system);
    const memory = (name: string, help: string, pick: (m: NodeJS.MemoryUsage) => number): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(pick(process.memoryUsage()));
        },
      });
    };
    memory('process_resident_memory_bytes', 'Resident memory size in bytes.', (m) => m.rss);
    memory('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', (m) => m.heapTotal);
    memory('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', (m) => m.heapUsed);
    memory('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', (m) => m.external);
    const loopGauge = (name: string, help: string, pick: (h: IntervalHistogram) => number): void => {
      const self = this;
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const h = self.monitor();
          // No sample yet (the first scrape started the monitor): nothing was late.
          this.set(h && h.count > 0 ? Math.max(0, pick(h) / 1e9 - LOOP_RESOLUTION_MS / 1000) : 0);
        },
      });
    };
    loopGauge('mockcloud_event_loop_delay_p50_seconds', 'Median delay of the event loop since the previous scrape.', (h) => h.percentile(50));
    loopGauge('mockcloud_event_loop_delay_p99_seconds', '99th percentile delay of the event loop since the previous scrape.', (h) =>
      h.percentile(99),
    );
    loopGauge('mockcloud_event_loop_delay_max_seconds', 'Longest delay of the event loop since the previous scrape.', (h) => h.max);
  }

  /**
   * After a scrape has read the event-loop figures: they start again, so each scrape shows the
   * time since the one before.
   */
  scraped(): void {
    this.loop?.reset();
  }

  stop(): void {
    this.stopped = true;
    this.loop?.disable();
    this.loop = undefined;
  }

  private monitor(): IntervalHistogram | undefined {
    if (!this.loop && !this.stopped) {
      this.loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
      this.loop.enable();
    }
    return this.loop;
  }
}
