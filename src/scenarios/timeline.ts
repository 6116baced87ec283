/**
 * The timeline of a scenario: every step and every repetition, in the order they happen
 * (time, then file order, then repetition), and how long the whole takes.
 */
import type { Scenario, TimelineEntry } from './types.js';

export function timeline(s: Scenario): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const step of s.steps) {
    const times = step.repeat?.times ?? 1;
    for (let rep = 0; rep < times; rep++) out.push({ step, rep, atMs: step.atMs + rep * (step.repeat?.everyMs ?? 0) });
  }
  return out.sort((a, b) => a.atMs - b.atMs || a.step.index - b.step.index || a.rep - b.rep);
}

/** When an entry is over: a wait after its duration, an event with a duration when the daemon ends it. */
export function entryEnd(e: TimelineEntry): number {
  const a = e.step.action;
  if (a.kind === 'wait') return e.atMs + a.ms;
  if (a.kind === 'event') return e.atMs + (a.event.durationMs ?? 0);
  return e.atMs;
}

/** How long a run takes (at least): until the last entry is over. */
export function scenarioLength(entries: readonly TimelineEntry[]): number {
  return entries.reduce((m, e) => Math.max(m, entryEnd(e)), 0);
}
