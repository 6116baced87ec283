/** What an event kind gets to act with, and what it gives back. */
import type { JsonHttpClient } from '../../common/http-client.js';
import type { Logger } from '../../common/log.js';
import type { RandomStream } from '../../common/seeded-random.js';
import type { EventFaultRule } from '../../agents/cn-agent/faults.js';
import type { MockCn } from '../../mockcn/types.js';
import type { Scheduler } from '../../runtime/scheduler.js';
import type { Timing } from '../../timing/timing.js';
import type { Conditions } from '../conditions.js';
import type { NetworkFaults } from '../network.js';
import type { PowerHolds } from '../power.js';
import type { EventRequest, EventType, OutboundApi } from '../types.js';

/** The daemon's pieces the engine acts through. */
export interface EventsHost {
  log: Logger;
  scheduler: Scheduler;
  http: JsonHttpClient;
  dataDir: string;
  /** The daemon's --seed: the default of an event's seed. */
  seed?: string;
  urls: Partial<Record<OutboundApi, string>>;
  fleet: { list(): MockCn[]; get(uuid: string): MockCn | undefined };
  /** cn-agent's fault seam (src/agents/cn-agent/faults.ts); absent: no task-fault events. */
  taskFaults?: { addEventRule(rule: EventFaultRule): string; remove(id: string): boolean };
  /** Whether cn-agent runs a task of this name (task-fault's task is checked against it). */
  knownTask?(name: string): boolean;
  /** The daemon's --boot-seconds, when given (else the timing's cn.boot). */
  bootSeconds?: number | undefined;
  /** The daemon's timing: CN boots, and the timing events' adjustments; absent: instant. */
  timing?: Timing | undefined;
}

export interface EventContext<T extends EventType = EventType> {
  id: string;
  req: EventRequest<T>;
  servers: MockCn[];
  host: EventsHost;
  network: NetworkFaults;
  power: PowerHolds;
  conditions: Conditions;
  /** The engine's stream for this purpose under the event's seed (shared by the events). */
  random(purpose: string): RandomStream;
  /** A stream of this event's own (its fault decisions), derived from its seed and id. */
  eventRandom(purpose: string): RandomStream;
  /** Run `fn` in `ms` on the shared scheduler, unless the event has ended by then. */
  schedule(ms: number, fn: () => void | Promise<void>): void;
  /** Aborts when the event ends. */
  signal: AbortSignal;
  /** VMs acted on, and targets left alone with why: shown in the answer and the log. */
  vms: string[];
  skipped: { uuid: string; reason: string }[];
}

export interface Applied {
  /** Undo the event's conditions (DELETE, its duration over); `stopping`: the daemon stops. */
  undo?(stopping: boolean): void | Promise<void>;
  /** The event ends on its own once this settles (a reboot started, a ramp done). */
  finished?: Promise<void>;
}

export type EventKind<T extends EventType> = (ctx: EventContext<T>) => Promise<Applied>;
