/**
 * Running a scenario: each timeline entry at its time (never before it; after it when the
 * entry before took longer), through a driver that does the work (the CLI drives the daemon's
 * control API). The run lasts until its last entry is over, event durations included, so a
 * finished run leaves the fleet as the scenario's states left it and no condition of it
 * still going, but for events written without a duration.
 *
 * Seeds: every event and every creation gets its own seed derived from the run's seed
 * (`<seed>:<step>:<repetition>`), so that a repeated `percent: 10` draws new servers each time
 * and the same run seed draws the same ones again.
 */
import { formatDuration } from '../common/duration.js';
import { entryEnd, scenarioLength, timeline } from './timeline.js';
import type { Action, EventSpec, Scenario, TimelineEntry } from './types.js';

/** What the event log's `source` says about where an event came from. */
export interface EventSource {
  scenario: string;
  step: number;
  line: number;
}

export interface CreateRequest {
  count: number;
  profile?: string;
  mix?: string;
  hostnamePrefix?: string;
  seed: string;
}

/** The work a run does; each method resolves with a one-line account of what it did. */
export interface ScenarioDriver {
  create(req: CreateRequest): Promise<string>;
  delete(req: { count: number } | { servers: string[] }): Promise<string>;
  /** Start an event: the account, and the event's id when one was started. */
  event(body: EventSpec & { seed: string; source: EventSource }): Promise<string | { account: string; id: string }>;
  mark(label: string, source: EventSource): Promise<string>;
  /**
   * Resolve once none of these events is active any more (the daemon ends each on its own clock,
   * a little after the run's); absent: the run trusts its own clock.
   */
  ended?(ids: readonly string[], signal?: AbortSignal): Promise<void>;
}

export interface RunListener {
  /** The run begins: `entries` on the timeline, lasting at least `lengthMs`. */
  begin?(entries: readonly TimelineEntry[], lengthMs: number): void;
  /** Entry `n` (0-based) is done; `lateMs` is how far behind its time it started. */
  done?(n: number, entry: TimelineEntry, account: string, lateMs: number): void;
  /** The last entry is done; the run waits `ms` for events' durations to run out. */
  draining?(ms: number): void;
}

export interface RunOptions {
  seed: string;
  signal?: AbortSignal;
  listener?: RunListener;
  /** Clock and sleep (tests of the timing logic may replace them). */
  now?: () => number;
}

/** A step failed: the run stops there. */
export class StepFailed extends Error {
  constructor(
    readonly entry: TimelineEntry,
    cause: unknown,
  ) {
    super(`step ${entry.step.index} (line ${entry.step.pos.line}) failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StepFailed';
  }
}

/** The run was interrupted (its signal aborted). */
export class RunAborted extends Error {
  constructor() {
    super('the scenario run was interrupted');
    this.name = 'RunAborted';
  }
}

export interface RunOutcome {
  entries: number;
  elapsedMs: number;
}

export function entrySeed(seed: string, entry: TimelineEntry): string {
  return `${seed}:${entry.step.index}:${entry.rep}`;
}

export async function runScenario(s: Scenario, driver: ScenarioDriver, opts: RunOptions): Promise<RunOutcome> {
  const now = opts.now ?? Date.now;
  const entries = timeline(s);
  const lengthMs = scenarioLength(entries);
  const start = now();
  /** Events started with a duration: the run is over when they are. */
  const lasting: string[] = [];
  opts.listener?.begin?.(entries, lengthMs);
  for (let n = 0; n < entries.length; n++) {
    const entry = entries[n]!;
    await sleepUntil(start + entry.atMs, now, opts.signal);
    const lateMs = Math.max(0, now() - (start + entry.atMs));
    let account: string;
    try {
      const done = await abortable(perform(s, entry, driver, opts.seed), opts.signal);
      if (typeof done === 'string') {
        account = done;
      } else {
        account = done.account;
        const a = entry.step.action;
        if (a.kind === 'event' && a.event.durationMs !== undefined) lasting.push(done.id);
      }
    } catch (err) {
      if (err instanceof RunAborted) throw err;
      throw new StepFailed(entry, err);
    }
    opts.listener?.done?.(n, entry, account, lateMs);
  }
  const end = start + lengthMs;
  if (end > now()) {
    opts.listener?.draining?.(end - now());
    await sleepUntil(end, now, opts.signal);
  }
  if (lasting.length > 0 && driver.ended) await abortable(driver.ended(lasting, opts.signal), opts.signal);
  return { entries: entries.length, elapsedMs: now() - start };
}

async function perform(s: Scenario, entry: TimelineEntry, driver: ScenarioDriver, seed: string): Promise<string | { account: string; id: string }> {
  const a: Action = entry.step.action;
  const source: EventSource = { scenario: s.name, step: entry.step.index, line: entry.step.pos.line };
  switch (a.kind) {
    case 'create':
      return driver.create({
        count: a.count,
        ...(a.profile !== undefined ? { profile: a.profile } : {}),
        ...(a.mix !== undefined ? { mix: a.mix } : {}),
        ...(a.hostnamePrefix !== undefined ? { hostnamePrefix: a.hostnamePrefix } : {}),
        seed: entrySeed(seed, entry),
      });
    case 'delete':
      return driver.delete('servers' in a ? { servers: a.servers } : { count: a.count });
    case 'event':
      return driver.event({ ...a.event, seed: entrySeed(seed, entry), source });
    case 'mark':
      return driver.mark(a.label, source);
    case 'wait':
      // A wait shapes the timeline (the steps after it start later); the runner sleeps until each entry's time.
      return `wait ${formatDuration(a.ms)} (until ${formatDuration(entryEnd(entry))})`;
  }
}

function sleepUntil(when: number, now: () => number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(new RunAborted());
  const ms = when - now();
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new RunAborted());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The work's promise, or a RunAborted as soon as the signal aborts (the work itself goes on where it runs). */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(new RunAborted());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new RunAborted());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
