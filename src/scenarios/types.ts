/**
 * A scenario file, as read: a list of steps on a timeline, each one action (create or delete
 * CNs, an event, a wait, a mark) at a time (`at`) or on a repeat (`every` + `times`). The
 * shapes here are what the parser hands on once the file has passed every check; the runner
 * and the target checks never see raw YAML.
 */

import type { SourcePos, YamlProblem } from '../common/yaml-reader.js';
/** Where something is in the file (1-based, as editors count). */
export type { SourcePos };

/** One complaint about a scenario file, at the line (and column) it is about. */
export type ScenarioProblem = YamlProblem;

// The event types and target selectors are the events engine's own (POST /events).
import type { EventType, TargetSpec } from '../events/types.js';
export { EVENT_TYPES, type EventType } from '../events/types.js';

/** Which servers an event is applied to: exactly one selector (the contract's `target`). */
export type Target = TargetSpec;

/** An event as POST /events takes it (durations already in milliseconds). */
export interface EventSpec {
  type: EventType;
  target: Target;
  durationMs?: number;
  params?: Record<string, unknown>;
}

export interface CreateAction {
  kind: 'create';
  count: number;
  profile?: string;
  /** "small:70,large:30", as written. */
  mix?: string;
  /** The mix read: profile name → weight. */
  mixWeights?: Record<string, number>;
  hostnamePrefix?: string;
}

/** The `count` newest CNs (as delete-servers --count), or the ones named. */
export type DeleteAction = { kind: 'delete'; count: number } | { kind: 'delete'; servers: string[] };

export interface EventAction {
  kind: 'event';
  event: EventSpec;
}

export interface WaitAction {
  kind: 'wait';
  ms: number;
}

export interface MarkAction {
  kind: 'mark';
  label: string;
}

export type Action = CreateAction | DeleteAction | EventAction | WaitAction | MarkAction;

export interface Step {
  /** 1-based, in file order. */
  index: number;
  /** Where the step begins in the file. */
  pos: SourcePos;
  /** When the step (its first repetition) happens, ms after the start. */
  atMs: number;
  /** A repeat: `times` occurrences `everyMs` apart; absent = once. */
  repeat?: { everyMs: number; times: number };
  action: Action;
  /** Where the action's target is written (for target problems found later). */
  targetPos?: SourcePos;
}

export interface Scenario {
  /** The `name:` of the file, else its file name without extension. */
  name: string;
  /** The file's `seed:`, if it has one (a --seed on the command line wins). */
  seed?: string;
  steps: Step[];
}

/** One occurrence on the timeline: a step, or one repetition of it. */
export interface TimelineEntry {
  step: Step;
  /** 0-based repetition (0 for a step that does not repeat). */
  rep: number;
  atMs: number;
}
