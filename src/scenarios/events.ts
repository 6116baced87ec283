/**
 * An `event:` step: the daemon's POST /events body (docs/scenarios.md; the control API
 * contract of issue 16) with its durations written the way people write them. Every field
 * the API takes in milliseconds (`durationMs`, `periodMs`, ...) is written without the `Ms`
 * (`duration: 30s`, `period: 1m`); everything else is as the API takes it. Each type takes only
 * its own params, and a rule that could never do anything (a fault that neither delays nor
 * fails) is refused here rather than left to do nothing for an hour.
 */
import type { Node } from 'yaml';
import { isUuid } from '../common/uuid.js';
import { isTimingKeyPrefix } from '../events/validate.js';
import { BUILTIN_PROFILES } from '../timing/builtin.js';
import { describe as show, type Entries, type YamlReader } from '../common/yaml-reader.js';
import { EVENT_TYPES, type EventSpec, type EventType, type SourcePos, type Target } from './types.js';

type ParamKind =
  | 'duration' | 'percent' | 'fraction' | 'exit-status' | 'mib' | 'string' | 'true' | 'vm-uuids' | 'api' | 'task'
  | 'factor' | 'timing-profile' | 'timing-keys';

interface ParamSpec {
  /** As written in the file. */
  name: string;
  kind: ParamKind;
}

interface TypeSpec {
  /** Whether a `duration` (after which the daemon undoes the event) applies. */
  duration: boolean;
  params: ParamSpec[];
  /** Each group: exactly one of these must be given ("one"), or at least one ("some"), or at most one ("most"). */
  groups?: { names: string[]; rule: 'one' | 'some' | 'most' }[];
  required?: string[];
}

const p = (name: string, kind: ParamKind): ParamSpec => ({ name, kind });

export const EVENT_SPECS: Record<EventType, TypeSpec> = {
  offline: { duration: true, params: [] },
  partition: { duration: true, params: [] },
  reboot: { duration: false, params: [p('boot', 'duration')] },
  'power-loss': { duration: false, params: [p('off', 'duration'), p('spread', 'duration'), p('boot', 'duration')] },
  flap: { duration: true, params: [p('period', 'duration'), p('down', 'duration')], required: ['period'] },
  'slow-heartbeat': { duration: true, params: [p('late', 'duration')], required: ['late'] },
  'vm-crash': {
    duration: false,
    params: [p('vms', 'vm-uuids'), p('percent', 'percent'), p('exitStatus', 'exit-status')],
    groups: [{ names: ['vms', 'percent'], rule: 'most' }],
  },
  'vm-reboot': { duration: false, params: [p('vms', 'vm-uuids'), p('percent', 'percent')], groups: [{ names: ['vms', 'percent'], rule: 'most' }] },
  'zpool-fill': { duration: false, params: [p('percent', 'percent'), p('over', 'duration')], required: ['percent'] },
  'memory-pressure': {
    duration: true,
    params: [p('availableMiB', 'mib'), p('percentUsed', 'percent')],
    groups: [{ names: ['availableMiB', 'percentUsed'], rule: 'one' }],
  },
  'task-fault': {
    duration: true,
    params: [p('task', 'task'), p('delay', 'duration'), p('error', 'string'), p('probability', 'fraction'), p('hang', 'true')],
    groups: [{ names: ['delay', 'error', 'hang'], rule: 'some' }],
  },
  'outbound-fault': {
    duration: true,
    params: [p('api', 'api'), p('delay', 'duration'), p('errorRate', 'fraction'), p('probability', 'fraction')],
    required: ['api'],
    groups: [{ names: ['delay', 'errorRate'], rule: 'some' }],
  },
  timing: {
    duration: true,
    params: [p('factor', 'factor'), p('profile', 'timing-profile'), p('vms', 'vm-uuids'), p('keys', 'timing-keys')],
    groups: [{ names: ['factor', 'profile'], rule: 'some' }],
  },
};

const TARGET_KEYS = ['servers', 'percent', 'profile', 'all', 'count'] as const;
const APIS = ['cnapi', 'vmapi', 'napi', '*'];

export interface ReadEvent {
  spec: EventSpec;
  targetPos: SourcePos;
  /** Where `params.task` is written, for the check against cn-agent's tasks. */
  taskPos?: SourcePos;
}

/** What a scenario file knows without a daemon: the cn-agent task names, when the caller has them. */
export interface EventKnowledge {
  taskNames?: readonly string[];
}

export function readEvent(r: YamlReader, node: Node | null, near: Node, known: EventKnowledge): ReadEvent | undefined {
  const e = r.entries(node, 'an event', near);
  if (!e) return undefined;
  const before = r.problems.length;
  r.onlyKeys(e, ['type', 'target', 'duration', 'params'], 'an event');
  const typeEntry = e.get('type');
  if (!typeEntry) {
    r.problem(node, `an event needs a "type": one of ${EVENT_TYPES.join(', ')}`);
    return undefined;
  }
  const typeValue = r.scalar(typeEntry.value);
  if (typeof typeValue !== 'string' || !(EVENT_TYPES as readonly string[]).includes(typeValue)) {
    r.problem(typeEntry.value, `unknown event type ${show(typeEntry.value)}; the types are ${EVENT_TYPES.join(', ')}`, typeEntry.key);
    return undefined;
  }
  const type = typeValue as EventType;
  const spec = EVENT_SPECS[type];
  const targetEntry = e.get('target');
  let target: Target | undefined;
  if (!targetEntry) r.problem(node, `the ${type} event needs a "target": one of ${TARGET_KEYS.join(', ')}`);
  else target = readTarget(r, targetEntry.value, targetEntry.key);
  let durationMs: number | undefined;
  const durationEntry = e.get('duration');
  if (durationEntry) {
    if (!spec.duration) r.problem(durationEntry.key, `a ${type} event takes no "duration": it is a change of state, not a condition that ends`);
    else durationMs = r.duration(durationEntry.value, 'duration', { min: 1 }, durationEntry.key);
  }
  const paramsEntry = e.get('params');
  let params: Record<string, unknown> | undefined;
  let taskPos: SourcePos | undefined;
  if (paramsEntry) {
    const pe = r.entries(paramsEntry.value, `the ${type} event's params`, paramsEntry.key);
    if (pe) {
      params = readParams(r, type, pe, paramsEntry.value ?? paramsEntry.key, known);
      const task = pe.get('task');
      if (task) taskPos = r.pos(task.value, task.key);
    }
  } else {
    params = readParams(r, type, new Map(), node ?? near, known);
  }
  if (r.problems.length > before || !target) return undefined;
  const out: EventSpec = { type, target };
  if (durationMs !== undefined) out.durationMs = durationMs;
  if (params && Object.keys(params).length > 0) out.params = params;
  return { spec: out, targetPos: r.pos(targetEntry!.value, targetEntry!.key), ...(taskPos ? { taskPos } : {}) };
}

function readTarget(r: YamlReader, node: Node | null, near: Node): Target | undefined {
  const e = r.entries(node, 'a target', near);
  if (!e) return undefined;
  r.onlyKeys(e, TARGET_KEYS, 'a target');
  const given = TARGET_KEYS.filter((k) => e.has(k));
  if (given.length !== 1) {
    r.problem(node, `a target names its servers in exactly one way (${TARGET_KEYS.join(', ')}); ${given.length ? `this one gives ${given.join(' and ')}` : 'this one gives none'}`);
    return undefined;
  }
  const key = given[0]!;
  const { value, key: keyNode } = e.get(key)!;
  switch (key) {
    case 'servers': {
      const list = r.list(value, 'target servers', (n) => {
        const s = r.scalar(n);
        if (typeof s === 'string' && isUuid(s)) return s.toLowerCase();
        r.problem(n, `${show(n)} is not a server UUID`, value);
        return undefined;
      }, keyNode);
      return list ? { servers: [...new Set(list)] } : undefined;
    }
    case 'percent': {
      const n = r.number(value, 'target percent', (v) => v > 0 && v <= 100, 'a number above 0 and at most 100', keyNode);
      return n === undefined ? undefined : { percent: n };
    }
    case 'profile': {
      const s = r.string(value, 'target profile', keyNode);
      return s === undefined ? undefined : { profile: s };
    }
    case 'all':
      if (r.scalar(value) !== true) {
        r.problem(value, `target "all" can only be true, not ${show(value)}`, keyNode);
        return undefined;
      }
      return { all: true };
    default: {
      const n = r.integer(value, 'target count', 1, 100_000, keyNode);
      return n === undefined ? undefined : { count: n };
    }
  }
}

/** The params of one event type, as the API takes them (durations as `<name>Ms`). */
function readParams(r: YamlReader, type: EventType, e: Entries, node: Node, known: EventKnowledge): Record<string, unknown> {
  const spec = EVENT_SPECS[type];
  const names = spec.params.map((x) => x.name);
  r.onlyKeys(e, names, `the ${type} event's params`);
  for (const name of spec.required ?? []) {
    if (!e.has(name)) r.problem(node, `the ${type} event needs params.${name}`);
  }
  for (const g of spec.groups ?? []) {
    const n = g.names.filter((x) => e.has(x)).length;
    const list = g.names.map((x) => `params.${x}`).join(', ');
    if (g.rule === 'one' && n !== 1) r.problem(node, `the ${type} event needs exactly one of ${list}`);
    if (g.rule === 'some' && n === 0) r.problem(node, `the ${type} event does nothing without one of ${list}`);
    if (g.rule === 'most' && n > 1) r.problem(node, `the ${type} event takes at most one of ${list}`);
  }
  const out: Record<string, unknown> = {};
  for (const ps of spec.params) {
    const entry = e.get(ps.name);
    if (!entry) continue;
    const what = `params.${ps.name}`;
    const v = readParam(r, ps.kind, entry.value, entry.key, what, known);
    if (v === undefined) continue;
    out[ps.kind === 'duration' ? `${ps.name}Ms` : ps.name] = v;
  }
  if (type === 'flap' && typeof out.downMs === 'number' && typeof out.periodMs === 'number' && out.downMs >= out.periodMs) {
    r.problem(e.get('down')!.value, `params.down must be shorter than params.period (a flap is down part of each period, then up)`);
  }
  return out;
}

function readParam(r: YamlReader, kind: ParamKind, value: Node | null, key: Node, what: string, known: EventKnowledge): unknown {
  switch (kind) {
    case 'duration':
      return r.duration(value, what, {}, key);
    case 'percent':
      return r.number(value, what, (v) => v > 0 && v <= 100, 'a number above 0 and at most 100', key);
    case 'fraction':
      return r.number(value, what, (v) => v >= 0 && v <= 1, 'a number from 0 to 1', key);
    case 'exit-status':
      return r.integer(value, what, 0, 255, key);
    case 'mib':
      return r.number(value, what, (v) => v >= 0, 'a number of MiB, 0 or more', key);
    case 'string':
      return r.string(value, what, key);
    case 'true':
      if (r.scalar(value) === true) return true;
      r.problem(value, `${what} can only be true`, key);
      return undefined;
    case 'api': {
      const s = r.scalar(value);
      if (typeof s === 'string' && APIS.includes(s)) return s;
      r.problem(value, `${what} must be one of ${APIS.join(', ')}, not ${show(value)}`, key);
      return undefined;
    }
    case 'task': {
      const s = r.string(value, what, key);
      if (s === undefined || s === '*') return s;
      if (known.taskNames && !known.taskNames.includes(s)) {
        r.problem(value, `cn-agent has no task ${JSON.stringify(s)} (a task name such as machine_create, or "*" for every task)`, key);
        return undefined;
      }
      return s;
    }
    case 'factor':
      return r.number(value, what, (v) => v > 0 && v <= 1000, 'a number over 0 up to 1000 (5: five times slower)', key);
    case 'timing-profile': {
      const s = r.string(value, what, key);
      if (s === undefined || BUILTIN_PROFILES.has(s)) return s;
      r.problem(value, `${what} must be a built-in timing profile (${[...BUILTIN_PROFILES.keys()].join(', ')})`, key);
      return undefined;
    }
    case 'timing-keys':
      return r.list(value, what, (n) => {
        const s = r.scalar(n);
        if (typeof s === 'string' && isTimingKeyPrefix(s)) return s;
        r.problem(n, `${show(n)} is no timing key (tasks, vm, cn, workflow, waitlist, or a key under them such as vm.boot)`, value);
        return undefined;
      }, key);
    case 'vm-uuids':
      return r.list(value, what, (n) => {
        const s = r.scalar(n);
        if (typeof s === 'string' && isUuid(s)) return s.toLowerCase();
        r.problem(n, `${show(n)} is not a VM UUID`, value);
        return undefined;
      }, key);
  }
}
