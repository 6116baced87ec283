/**
 * The daemon's Prometheus metrics (docs/metrics.md), on one prom-client registry per daemon.
 *
 * Most figures are read at scrape time from what the components already count (the fleet,
 * the CNAPI reporter, cn-agent's admission, the events engine, the scheduler, the HTTP
 * client), in `collect()` callbacks. What needs an observation (a heartbeat's lateness, a
 * task's duration, an outbound request's status and latency) is recorded by the observers
 * below, which the daemon hands to the components as plain callbacks: O(1) each, no per-CN
 * label (a `server_uuid` label on 10,000 CNs would be 10,000 series), no timer.
 *
 * Names follow Prometheus's conventions (counters end in `_total`, durations in seconds), with
 * the `mockcloud_` prefix, but for the one name Triton's services already use:
 * `mockcloud_outbound_requests_completed` is node-triton-metrics' `http_requests_completed`
 * (lib/metrics-manager.js createRestifyMetrics), kept without `_total` as there. Every series
 * has Triton's `datacenter` and `service` labels; `instance` is left to Prometheus (the target),
 * and the daemon id, version and build are on `mockcloud_daemon_info` (docs/metrics.md).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TaskEnd } from '../agents/cn-agent/runner.js';
import { MockcloudError } from '../common/errors.js';
import type { HttpRequest } from '../common/http-client.js';
import { SERVER_STATES, serverState, type ServerState } from '../events/index.js';
import type { ServiceUrls } from '../runtime/agent-plugin.js';
import { registerAgentFileMetrics } from './agent-files.js';
import { ProcessMetrics } from './process.js';
import type { MetricSources, TaskView } from './sources.js';

/** `Content-Type` of the Prometheus text format, version 0.0.4. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;


const APIS = ['cnapi', 'vmapi', 'napi', 'imgapi', 'sapi', 'fwapi'] as const;

/** What one scrape reads of the fleet and the plug-ins: walked once, whichever metric asks first. */
interface FleetSnapshot {
  byProfile: Map<string, Record<ServerState, number>>;
  registered: number;
  vms: Map<string, number>;
  pluginStats: Map<string, Record<string, number>>;
  /** cn-agent's task, admission and connection figures, read once. */
  tasks: TaskView | undefined;
}

export interface DaemonMetricsOptions {
  sources: MetricSources;
  /** The Triton APIs, to name the API of each outbound request by its URL. */
  urls: ServiceUrls;
  /** Labels on every series (Triton's: datacenter, service). */
  labels?: Record<string, string>;
  /** This daemon, for mockcloud_daemon_info: its id (`<data-dir>/daemon-id`) and build. */
  daemon?: { id: string; version: string; gitSha: string | null };
}

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly process: ProcessMetrics;
  private readonly urls: [string, string][];
  private readonly heartbeatLateness: Histogram;
  private readonly tasksCompleted: Counter;
  private readonly taskDuration: Histogram;
  private readonly outboundCompleted: Counter;
  private readonly outboundDuration: Histogram;
  private readonly sources: MetricSources;
  private snapshot: FleetSnapshot | undefined;

  constructor(opts: DaemonMetricsOptions) {
    const src = opts.sources;
    this.sources = src;
    const snap = (): FleetSnapshot => (this.snapshot ??= this.readFleet());
    const registers = [this.registry];
    if (opts.labels) this.registry.setDefaultLabels(opts.labels);
    this.urls = [];
    for (const api of APIS) {
      const base = opts.urls[api];
      if (base) this.urls.push([base.replace(/\/+$/, ''), api]);
    }

    // ---- the daemon itself: one series, value 1, to join `up` (or anything) with on `instance`
    const daemon = opts.daemon;
    if (daemon) {
      new Gauge({
        name: 'mockcloud_daemon_info',
        help: 'This daemon (value 1): its id (the <id> of sysinfo Mockcloud Daemon), version and git commit.',
        labelNames: ['daemon_id', 'version', 'git_sha'],
        registers,
      }).set({ daemon_id: daemon.id, version: daemon.version, git_sha: daemon.gitSha ?? 'unknown' }, 1);
    }

    // ---- the fleet
    new Gauge({
      name: 'mockcloud_servers',
      help: 'Mock CNs by state (running, offline, partitioned, rebooting) and hardware profile.',
      labelNames: ['state', 'profile'],
      registers,
      collect() {
        this.reset();
        for (const [profile, byState] of snap().byProfile) {
          for (const state of SERVER_STATES) this.set({ state, profile }, byState[state]);
        }
      },
    });
    new Gauge({
      name: 'mockcloud_servers_registered',
      help: 'Mock CNs whose sysinfo registration CNAPI has accepted (they heartbeat and take tasks).',
      registers,
      collect() {
        this.set(snap().registered);
      },
    });
    new Gauge({
      name: 'mockcloud_vms',
      help: 'VMs on the mock CNs by state (do_not_inventory VMs left out).',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        for (const [state, n] of snap().vms) this.set({ state }, n);
      },
    });

    // ---- reports to the Triton APIs (heartbeats, status, VM state)
    const reports = (sent: boolean) =>
      function (this: Counter) {
        this.reset();
        const reporter = src.reporter();
        if (reporter) {
          for (const [kind, c] of Object.entries(reporter.counters)) {
            this.inc({ api: 'cnapi', kind }, sent ? c.ok + c.failed : c.failed);
          }
        }
        const vm = snap().pluginStats.get('vm-agent');
        if (vm) {
          const n = (k: string): number => vm[k] ?? 0;
          this.inc({ api: 'vmapi', kind: 'sync' }, sent ? n('syncs') + n('syncFailures') : n('syncFailures'));
          this.inc({ api: 'vmapi', kind: 'vm' }, sent ? n('vmPuts') + n('destroyedPuts') + n('vmPutFailures') : n('vmPutFailures'));
        }
      };
    new Counter({
      name: 'mockcloud_reports_sent_total',
      help: "Reports the mock CNs' agents sent, by target API and kind (cnapi: sysinfo, agents, heartbeat, status; vmapi: sync, vm).",
      labelNames: ['api', 'kind'],
      registers,
      collect: reports(true),
    });
    new Counter({
      name: 'mockcloud_reports_failed_total',
      help: 'Of those reports, the ones that failed (no answer in time, a reset, or a non-2xx answer).',
      labelNames: ['api', 'kind'],
      registers,
      collect: reports(false),
    });
    this.heartbeatLateness = new Histogram({
      name: 'mockcloud_heartbeat_lateness_seconds',
      help: "How long after it was due (the previous heartbeat's end plus the 5 s interval) each heartbeat went out.",
      // From 0.1 ms: what a heartbeat waits on a quiet daemon is the scheduler's slice, well under
      // a millisecond; a p99 of "5 ms" (the lowest bucket before) said nothing. Up to 30 s: a
      // slow-heartbeat event's lateness.
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30],
      registers,
    });
    new Gauge({
      name: 'mockcloud_servers_failing',
      help: 'Mock CNs whose last CNAPI report of this kind failed: they retry (registration with backoff, heartbeats and status on their interval).',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        const reporter = src.reporter();
        if (reporter) for (const [kind, n] of Object.entries(reporter.failingCns)) this.set({ kind }, n);
      },
    });
    new Gauge({
      name: 'mockcloud_retries_pending',
      help: 'Work waiting out a retry backoff, by agent: CN registrations (cnapi-reporter), VM state pushes (vm-agent), NICs (net-agent), CNs to adopt (sapi-instances).',
      labelNames: ['agent'],
      registers,
      collect() {
        this.reset();
        const reporter = src.reporter();
        if (reporter) this.set({ agent: 'cnapi-reporter' }, reporter.failingCns.sysinfo);
        for (const [name, s] of snap().pluginStats) {
          const n = name === 'sapi-instances' ? s.pendingCns : s.retrying;
          if (n !== undefined) this.set({ agent: name }, n);
        }
      },
    });

    registerAgentFileMetrics(registers, () => snap().pluginStats);

    // ---- cn-agent tasks
    this.tasksCompleted = new Counter({
      name: 'mockcloud_tasks_completed_total',
      help: 'cn-agent tasks answered, by task and outcome (succeeded, failed, crashed, timed_out, aborted).',
      labelNames: ['task', 'outcome'],
      registers,
    });
    this.taskDuration = new Histogram({
      name: 'mockcloud_task_duration_seconds',
      help: "cn-agent tasks' time from dispatch to answer, by task.",
      labelNames: ['task'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers,
    });
    new Gauge({
      name: 'mockcloud_tasks_in_flight',
      help: 'cn-agent tasks running now, across the fleet.',
      registers,
      collect() {
        this.set(snap().tasks?.inFlight ?? 0);
      },
    });
    new Gauge({
      name: 'mockcloud_tasks_queued',
      help: 'cn-agent tasks waiting for their turn (beyond --max-tasks or --max-tasks-per-server).',
      registers,
      collect() {
        this.set(snap().tasks?.admission?.queued ?? 0);
      },
    });
    new Gauge({
      name: 'mockcloud_task_limit',
      help: 'The bounds of cn-agent task admission (--max-tasks: in_flight, --max-tasks-per-server: per_server, --max-queued-tasks: queued).',
      labelNames: ['bound'],
      registers,
      collect() {
        this.reset();
        const l = snap().tasks?.admission?.limits;
        if (!l) return;
        this.set({ bound: 'in_flight' }, l.maxInFlight);
        this.set({ bound: 'per_server' }, l.maxPerCn);
        this.set({ bound: 'queued' }, l.maxQueued);
      },
    });
    new Gauge({
      name: 'mockcloud_agent_connections',
      help: 'Connections open now to the CN sockets (cn-agent), across the fleet.',
      registers,
      collect() {
        this.set(snap().tasks?.connections?.open ?? 0);
      },
    });
    new Gauge({
      name: 'mockcloud_agent_connections_limit',
      help: 'The cap on open connections to the CN sockets (--max-connections); beyond it a new one is closed at once.',
      registers,
      collect() {
        const c = snap().tasks?.connections;
        if (c) this.set(c.limits.maxConnections);
        else this.reset();
      },
    });
    new Counter({
      name: 'mockcloud_agent_connections_closed_total',
      help:
        'Connections to the CN sockets closed by the daemon, by reason (idle_or_slow_headers, slow_body: a deadline passed; ' +
        'shed_idle, shed_kept_alive: the oldest idle ones closed at the cap to make room; over_limit: at the cap with every slot busy).',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        const c = snap().tasks?.connections;
        if (!c) return;
        this.inc({ reason: 'idle_or_slow_headers' }, c.timedOut.waiting);
        this.inc({ reason: 'slow_body' }, c.timedOut.body);
        this.inc({ reason: 'shed_idle' }, c.shed?.idle ?? 0);
        this.inc({ reason: 'shed_kept_alive' }, c.shed?.kept ?? 0);
        this.inc({ reason: 'over_limit' }, c.refused);
      },
    });
    new Counter({
      name: 'mockcloud_tasks_refused_total',
      help: 'Task requests cn-agent refused before running them, by reason (busy: 503 with the queue full; not_registered, paused, bad_request, unknown_task).',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        const t = snap().tasks;
        if (t?.admission) this.inc({ reason: 'busy' }, t.admission.refused);
        if (t?.rejected) {
          this.inc({ reason: 'not_registered' }, t.rejected.notRegistered);
          this.inc({ reason: 'paused' }, t.rejected.paused);
          this.inc({ reason: 'bad_request' }, t.rejected.badRequest);
          this.inc({ reason: 'unknown_task' }, t.rejected.unknownTask);
        }
      },
    });

    // ---- outbound requests (the shared HTTP client)
    this.outboundCompleted = new Counter({
      name: 'mockcloud_outbound_requests_completed',
      help: 'Requests to the Triton APIs through the shared HTTP client, by API, method and status code (timeout, error: no answer).',
      labelNames: ['api', 'method', 'status_code'],
      registers,
    });
    this.outboundDuration = new Histogram({
      name: 'mockcloud_outbound_request_duration_seconds',
      help: 'Time from sending a request to the Triton APIs to its answer (or its failure), by API and method.',
      labelNames: ['api', 'method'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    new Counter({
      name: 'mockcloud_outbound_retries_total',
      help: 'Idempotent requests sent again on a fresh connection after a kept-alive one was reset.',
      registers,
      collect() {
        this.reset();
        this.inc(src.http.stats.retries);
      },
    });
    new Gauge({
      name: 'mockcloud_outbound_requests_queued',
      help: "Agents' bulk sync requests waiting for their turn (at most 32 in flight).",
      registers,
      collect() {
        this.set(src.http.backgroundQueued);
      },
    });

    // ---- fault events and scenarios
    new Counter({
      name: 'mockcloud_events_started_total',
      help: 'Fault events started (POST /events), by type and source (scenario: a scenario step; api: anyone else).',
      labelNames: ['type', 'source'],
      registers,
      collect() {
        this.reset();
        for (const e of src.events()?.started ?? []) this.inc({ type: e.type, source: e.source }, e.count);
      },
    });
    new Counter({
      name: 'mockcloud_events_ended_total',
      help: 'Fault events ended, by type and reason (duration, deleted, done, failed, daemon-stop).',
      labelNames: ['type', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const e of src.events()?.ended ?? []) this.inc({ type: e.type, reason: e.reason }, e.count);
      },
    });
    new Gauge({
      name: 'mockcloud_events_active',
      help: 'Fault events running now, by type.',
      labelNames: ['type'],
      registers,
      collect() {
        this.reset();
        for (const e of src.events()?.active ?? []) this.set({ type: e.type }, e.count);
      },
    });
    new Counter({
      name: 'mockcloud_scenario_steps_applied_total',
      help: 'Scenario steps the daemon applied, by action (event: POST /events, mark: POST /events/marks, with a scenario source).',
      labelNames: ['action'],
      registers,
      collect() {
        this.reset();
        const counts = src.events();
        let events = 0;
        for (const e of counts?.started ?? []) if (e.source === 'scenario') events += e.count;
        const marks = counts?.marks.find((m) => m.source === 'scenario')?.count ?? 0;
        this.inc({ action: 'event' }, events);
        this.inc({ action: 'mark' }, marks);
      },
    });

    // ---- the daemon
    new Gauge({
      name: 'mockcloud_scheduler_jobs',
      help: "Jobs on the daemon's one scheduler (heartbeats, status reports, agent syncs, retries, event timers).",
      registers,
      collect() {
        this.set(src.scheduler.size);
      },
    });
    new Counter({
      name: 'mockcloud_scheduler_job_errors_total',
      help: 'Scheduled jobs that threw or rejected.',
      registers,
      collect() {
        this.reset();
        this.inc(src.scheduler.errors);
      },
    });
    new Counter({
      name: 'mockcloud_errors_total',
      help: 'Errors the daemon counted, by kind (as `mockcloud status` shows them, e.g. cnapi.heartbeat, vm-agent.vmapi).',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        for (const [kind, n] of src.errors()) this.inc({ kind }, n);
      },
    });
    this.process = new ProcessMetrics(this.registry);
  }

  /** For CnapiReporterOptions.onHeartbeatLate. */
  readonly heartbeatLate = (ms: number): void => {
    this.heartbeatLateness.observe(ms / 1000);
  };

  /** For TaskRunnerOptions.onTaskEnd. */
  readonly taskEnded = (task: string, end: TaskEnd, ms: number): void => {
    this.tasksCompleted.inc({ task, outcome: end });
    this.taskDuration.observe({ task }, ms / 1000);
  };

  /** For JsonHttpClient.observer. */
  readonly requestEnded = (req: HttpRequest, statusCode: number | undefined, err: unknown, ms: number): void => {
    const api = this.apiOf(req.url);
    const status = statusCode !== undefined ? String(statusCode) : isTimeout(err) ? 'timeout' : 'error';
    this.outboundCompleted.inc({ api, method: req.method, status_code: status });
    this.outboundDuration.observe({ api, method: req.method }, ms / 1000);
  };

  /** The Prometheus text of every metric now. */
  async scrape(): Promise<string> {
    this.snapshot = undefined;
    try {
      return await this.registry.metrics();
    } finally {
      this.snapshot = undefined;
      this.process.scraped();
    }
  }

  stop(): void {
    this.process.stop();
  }

  /** One walk over the fleet (and each CN's VM index) and one stats() per plug-in. */
  private readFleet(): FleetSnapshot {
    const src = this.sources;
    const byProfile = new Map<string, Record<ServerState, number>>();
    const vms = new Map<string, number>([
      ['running', 0],
      ['stopped', 0],
    ]);
    let registered = 0;
    for (const cn of src.servers()) {
      let byState = byProfile.get(cn.profile);
      if (!byState) byProfile.set(cn.profile, (byState = { running: 0, offline: 0, partitioned: 0, rebooting: 0 }));
      byState[serverState(cn.power, src.faultState(cn.uuid))]++;
      if (cn.registered) registered++;
      for (const vm of cn.vms.list()) vms.set(vm.state, (vms.get(vm.state) ?? 0) + 1);
    }
    const pluginStats = new Map<string, Record<string, number>>();
    for (const p of src.plugins()) {
      const s = p.stats?.();
      if (s) pluginStats.set(p.name, s);
    }
    return { byProfile, registered, vms, pluginStats, tasks: src.tasks() };
  }

  private apiOf(url: string): string {
    for (const [base, api] of this.urls) {
      if (url.startsWith(base) && (url.length === base.length || url[base.length] === '/' || url[base.length] === '?')) return api;
    }
    return 'other';
  }
}


function isTimeout(err: unknown): boolean {
  return err instanceof MockcloudError && err.code === 'GatewayTimeout';
}
