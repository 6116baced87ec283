/**
 * The one seam where a delay or a failure can be injected into tasks at run time, for chaos
 * and timing tests of the consumers: per task name, per CN, or fleet-wide, with a probability.
 * The control API exposes it; tests drive it directly.
 *
 *   runner.faults.set({ task: 'machine_create', delayMs: 2000 })            every CN
 *   runner.faults.set({ server: '<uuid>', error: 'disk on fire' })         one CN, every task
 *   runner.faults.set({ task: 'machine_boot', error: 'boom', probability: 0.1 })
 *
 * A matching rule delays the task after its `start` event (so the reply is held like a slow
 * CN's) and then, if it has an `error`, fails the task with it (HTTP 500, like any task error).
 */
import { MockcloudError } from '../../common/errors.js';
import { isUuid, newUuid } from '../../common/uuid.js';

export interface FaultSpec {
  /** One CN's uuid; absent means every CN. */
  server?: string;
  /** One task name; absent means every task. */
  task?: string;
  /** Hold the task this long (ms) before it runs. */
  delayMs?: number;
  /** Fail the task with this message. */
  error?: string;
  /** Chance in [0, 1] that the rule applies to a given task; 1 by default. */
  probability?: number;
}

export interface FaultRule extends FaultSpec {
  id: string;
  /** How often the rule fired. */
  hits: number;
  /** A task-fault event's rule (src/events): the event's id. */
  event?: string;
}

/**
 * A rule a task-fault event adds: a set of CNs rather than one, the event's own (seeded)
 * random stream, and `hang`. Not validated here: the events engine validated the request.
 */
export interface EventFaultRule extends Omit<FaultSpec, 'server'> {
  event: string;
  /** The CNs it applies to; absent: every CN. */
  servers?: ReadonlySet<string>;
  /** Hold each matching task until this signal aborts (the event ended) or its client goes. */
  hang?: AbortSignal;
  random?: () => number;
}

/** What applies to one task: the summed delay and the first error. */
export interface FaultEffect {
  delayMs: number;
  error?: string;
  /** Hold the task until this aborts (see EventFaultRule.hang). */
  hang?: AbortSignal;
  rules: string[];
}

interface StoredRule extends FaultRule {
  servers?: ReadonlySet<string>;
  hang?: AbortSignal;
  random?: () => number;
}

const MAX_DELAY_MS = 3600 * 1000;

export class FaultInjector {
  private readonly rules = new Map<string, StoredRule>();

  constructor(private readonly random: () => number = Math.random) {}

  /** Add a rule (validated: this is the control API's edge). */
  set(spec: unknown): FaultRule {
    const rule: FaultRule = { ...validateFaultSpec(spec), id: newUuid(), hits: 0 };
    this.rules.set(rule.id, rule);
    return rule;
  }

  /** A task-fault event's rule; its id, to remove it when the event ends. */
  addEventRule(spec: EventFaultRule): string {
    const rule: StoredRule = { ...spec, id: newUuid(), hits: 0 };
    this.rules.set(rule.id, rule);
    return rule.id;
  }

  remove(id: string): boolean {
    return this.rules.delete(id);
  }

  /** Remove every rule, or those of one CN; events' rules stay (they end with their event). */
  clear(server?: string): void {
    for (const [id, rule] of this.rules) {
      if (rule.event !== undefined) continue;
      if (server === undefined || rule.server === server) this.rules.delete(id);
    }
  }

  list(): FaultRule[] {
    return [...this.rules.values()].map(({ servers, hang, random: _random, ...r }) => ({
      ...r,
      ...(servers ? { servers: [...servers] } : {}),
      ...(hang ? { hang: true } : {}),
    }));
  }

  get size(): number {
    return this.rules.size;
  }

  /** The effect for one task about to run; undefined when nothing applies (the fast path). */
  effectFor(server: string, task: string): FaultEffect | undefined {
    if (this.rules.size === 0) return undefined;
    let effect: FaultEffect | undefined;
    for (const rule of this.rules.values()) {
      if (rule.server !== undefined && rule.server !== server) continue;
      if (rule.servers !== undefined && !rule.servers.has(server)) continue;
      if (rule.task !== undefined && rule.task !== task) continue;
      if (rule.probability !== undefined && (rule.random ?? this.random)() >= rule.probability) continue;
      rule.hits++;
      effect ??= { delayMs: 0, rules: [] };
      effect.rules.push(rule.id);
      effect.delayMs = Math.min(MAX_DELAY_MS, effect.delayMs + (rule.delayMs ?? 0));
      if (effect.error === undefined && rule.error !== undefined) effect.error = rule.error;
      if (effect.hang === undefined && rule.hang !== undefined && !rule.hang.aborted) effect.hang = rule.hang;
    }
    return effect;
  }
}

export function validateFaultSpec(spec: unknown): FaultSpec {
  const bad = (msg: string) => new MockcloudError('InvalidArgument', `fault: ${msg}`);
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw bad('must be an object');
  const s = spec as Record<string, unknown>;
  const known = new Set(['server', 'task', 'delayMs', 'error', 'probability']);
  for (const k of Object.keys(s)) if (!known.has(k)) throw bad(`unknown key "${k}"`);
  const out: FaultSpec = {};
  if (s.server !== undefined) {
    if (!isUuid(s.server)) throw bad('server must be a server uuid');
    out.server = s.server.toLowerCase();
  }
  if (s.task !== undefined) {
    if (typeof s.task !== 'string' || !/^[a-z_]{1,64}$/.test(s.task)) throw bad('task must be a task name');
    out.task = s.task;
  }
  if (s.delayMs !== undefined) {
    if (typeof s.delayMs !== 'number' || !Number.isInteger(s.delayMs) || s.delayMs < 0 || s.delayMs > MAX_DELAY_MS) {
      throw bad(`delayMs must be an integer from 0 to ${MAX_DELAY_MS}`);
    }
    out.delayMs = s.delayMs;
  }
  if (s.error !== undefined) {
    if (typeof s.error !== 'string' || s.error.length === 0 || s.error.length > 1000) {
      throw bad('error must be a non-empty message of at most 1000 characters');
    }
    out.error = s.error;
  }
  if (s.probability !== undefined) {
    if (typeof s.probability !== 'number' || !(s.probability >= 0 && s.probability <= 1)) {
      throw bad('probability must be a number from 0 to 1');
    }
    out.probability = s.probability;
  }
  if (out.delayMs === undefined && out.error === undefined) throw bad('give delayMs, error or both');
  return out;
}
