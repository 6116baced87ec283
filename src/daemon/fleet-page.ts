/**
 * The daemon's side of the fleet page (src/ui): what the page reads, from the daemon's own
 * objects, and its listener started at `--ui-address` (127.0.0.1, any free port, by default).
 */
import type { CnapiReporter } from '../agents/cn-agent/cnapi-reporter/index.js';
import { MockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { describeSystemError } from '../common/system-errors.js';
import type { EventsEngine } from '../events/index.js';
import type { Scheduler } from '../runtime/scheduler.js';
import type { BootService } from '../boot/boot-service.js';
import { bootView, summarize } from '../boot/records.js';
import { DEFAULT_UI_ADDRESS } from '../ui/address.js';
import { UiServer } from '../ui/server.js';
import type { FleetCounters, FleetSource } from '../ui/source.js';
import { settingHint, type DaemonConfig } from './config.js';
import type { ControlHandlers } from './control-api.js';
import type { Fleet } from './fleet.js';
import type { CnAgentHost } from './services.js';

export interface FleetPageParts {
  config: DaemonConfig;
  log: Logger;
  scheduler: Scheduler;
  fleet: Fleet;
  reporter: CnapiReporter;
  cnAgent: CnAgentHost;
  /** Tasks answered and their summed time to the answer (ms), counted where the daemon observes each task's end. */
  taskLatency: { readonly count: number; readonly totalMs: number };
  events: EventsEngine;
  /** The daemon's error counts by kind (Daemon.errors). */
  errors: ReadonlyMap<string, number>;
  /** The control API's handlers: the page's event buttons call these same ones. */
  control: Pick<ControlHandlers, 'startEvent' | 'endEvent'>;
  /** What the agent plug-ins say of a CN (their `describe`). */
  agentFacts?: (uuid: string) => Record<string, unknown>;
  /** The CNs' boots (src/boot). */
  boot?: BootService;
}

export function fleetSource(p: FleetPageParts): FleetSource {
  return {
    list: () => p.fleet.list(),
    get: (uuid) => p.fleet.get(uuid),
    lastHeartbeatAt: (uuid) => p.reporter.lastHeartbeatAt(uuid),
    lastKnownHeartbeatAt: (uuid) => p.reporter.lastKnownHeartbeatAt(uuid),
    heartbeatIntervalMs: p.reporter.timings.heartbeatIntervalMs,
    heartbeats: !p.reporter.standalone,
    activeEvents: () => p.events.list().active,
    faultState: (uuid) => p.events.faultState(uuid),
    eventLogPath: p.events.logPath,
    taskHistory: (uuid) => p.cnAgent.history?.(uuid),
    counters: (): FleetCounters => {
      const tasks = (p.cnAgent.stats?.().tasks ?? {}) as Record<string, number>;
      let errors = (tasks.failed ?? 0) + (tasks.crashed ?? 0) + (tasks.timedOut ?? 0) + (tasks.aborted ?? 0);
      for (const n of p.errors.values()) errors += n;
      return {
        heartbeats: p.reporter.counters.heartbeat.ok,
        tasks: tasks.started ?? 0,
        tasksAnswered: p.taskLatency.count,
        taskMsTotal: p.taskLatency.totalMs,
        errors,
      };
    },
    ...(p.agentFacts ? { agentFacts: p.agentFacts } : {}),
    startEvent: (body) => p.control.startEvent(body),
    endEvent: (id) => p.control.endEvent(id),
    ...(p.boot ? bootParts(p.boot) : {}),
  };
}

function bootParts(boot: BootService): Pick<FleetSource, 'boot' | 'booting' | 'bootSummary'> {
  return {
    boot: (uuid) => {
      const r = boot.records.get(uuid);
      return r ? bootView(r) : undefined;
    },
    booting: (uuid) => {
      const r = boot.records.get(uuid);
      return r !== undefined && r.upAt === undefined && r.phase !== 'abandoned';
    },
    bootSummary: () => {
      const all = boot.records.list();
      if (all.length === 0) return undefined;
      // The storm: the boots of the event that caused the latest one, else every boot.
      const latest = all.reduce((a, b) => (b.startedAt > a.startedAt ? b : a));
      const eventId = latest.eventId ?? null;
      return { ...summarize(eventId ? all.filter((r) => r.eventId === eventId) : all), eventId };
    },
  };
}

/** Start the page's listener; undefined with `--ui-address none`. */
export async function startFleetPage(p: FleetPageParts): Promise<UiServer | undefined> {
  const address = p.config.uiAddress === undefined ? DEFAULT_UI_ADDRESS : p.config.uiAddress;
  if (address === null) return undefined;
  const ui = new UiServer({ source: fleetSource(p), scheduler: p.scheduler, log: p.log, address });
  try {
    await ui.start();
  } catch (err) {
    await ui.stop().catch(() => undefined);
    throw new MockcloudError(
      'InvalidArgument',
      `the fleet page cannot listen on ${address.ip}:${address.port}: ${describeSystemError(err)}; ` +
        `choose another address with ${settingHint('uiAddress')}, or none for no page`,
      { cause: err },
    );
  }
  return ui;
}
