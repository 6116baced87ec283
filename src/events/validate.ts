/**
 * The edge of the events API: a POST /events body (or a mark) checked once, with a message
 * that names the field. A bad request is a 400 with code InvalidArgument, as the contract
 * between the events and scenarios branches says (docs/events.md).
 */
import { MockcloudError } from '../common/errors.js';
import { isUuid } from '../common/uuid.js';
import { BUILTIN_PROFILES } from '../timing/builtin.js';
import { KNOWN_KEYS } from '../timing/catalogue.js';
import {
  EVENT_TYPES,
  type EventRequest,
  type EventSource,
  type EventType,
  type OutboundApi,
  type ParamsByType,
  type TargetSpec,
  type VmPick,
} from './types.js';

/** Longest event or delay we take: 30 days. */
export const MAX_DURATION_MS = 30 * 24 * 3600 * 1000;

/** Types that last (end after durationMs, or at DELETE); the others act and are done. */
export const LASTING: ReadonlySet<EventType> = new Set([
  'offline',
  'partition',
  'flap',
  'slow-heartbeat',
  'memory-pressure',
  'task-fault',
  'outbound-fault',
  'timing',
]);

type Obj = Record<string, unknown>;

export function badEvent(message: string): MockcloudError {
  return new MockcloudError('BadRequest', message, { restCode: 'InvalidArgument' });
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function onlyKeys(o: Obj, where: string, known: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw badEvent(`${where}: unknown key "${k}" (known: ${known.join(', ') || 'none'})`);
  }
}

function int(v: unknown, name: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw badEvent(`${name} must be an integer from ${min} to ${max}`);
  }
  return v;
}

function num(v: unknown, name: string, min: number, max: number, minExclusive = false): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v > max || (minExclusive ? v <= min : v < min)) {
    throw badEvent(`${name} must be a number ${minExclusive ? 'over' : 'from'} ${min} ${minExclusive ? 'up to' : 'to'} ${max}`);
  }
  return v;
}

function ms(v: unknown, name: string, min = 0): number {
  return int(v, name, min, MAX_DURATION_MS);
}

export function validateEvent(body: unknown): EventRequest {
  if (!isObj(body)) throw badEvent('the event must be a JSON object');
  onlyKeys(body, 'event', ['type', 'target', 'durationMs', 'params', 'seed', 'source']);
  const type = body.type;
  if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) {
    throw badEvent(`type must be one of ${EVENT_TYPES.join(', ')}`);
  }
  const t = type as EventType;
  const out: EventRequest = { type: t, target: validateTarget(body.target), params: validateParams(t, body.params) };
  if (body.durationMs !== undefined) {
    if (!LASTING.has(t)) throw badEvent(`a ${t} event takes no durationMs (it acts once; see docs/events.md)`);
    out.durationMs = ms(body.durationMs, 'durationMs', 1);
  }
  if (body.seed !== undefined) {
    if (typeof body.seed !== 'string' || body.seed.length === 0 || body.seed.length > 200) {
      throw badEvent('seed must be a non-empty string of at most 200 characters');
    }
    out.seed = body.seed;
  }
  if (body.source !== undefined) out.source = validateSource(body.source);
  return out;
}

export function validateSource(v: unknown): EventSource {
  if (!isObj(v)) throw badEvent('source must be an object {scenario?, step?, line?, via?}');
  onlyKeys(v, 'source', ['scenario', 'step', 'line', 'via']);
  const out: EventSource = {};
  if (v.scenario !== undefined) {
    if (typeof v.scenario !== 'string' || v.scenario.length > 1000) throw badEvent('source.scenario must be a string');
    out.scenario = v.scenario;
  }
  if (v.step !== undefined) out.step = int(v.step, 'source.step', 0, 1e9);
  if (v.line !== undefined) out.line = int(v.line, 'source.line', 0, 1e9);
  if (v.via !== undefined) {
    if (typeof v.via !== 'string' || v.via.length === 0 || v.via.length > 100) throw badEvent('source.via must be a string of 1 to 100 characters');
    out.via = v.via;
  }
  return out;
}

function validateTarget(v: unknown): TargetSpec {
  if (!isObj(v)) throw badEvent('target must be an object with one of servers, percent, count, profile, all');
  const keys = Object.keys(v);
  onlyKeys(v, 'target', ['servers', 'percent', 'count', 'profile', 'all']);
  if (keys.length !== 1) throw badEvent('target takes exactly one of servers, percent, count, profile, all');
  if (v.servers !== undefined) {
    if (!Array.isArray(v.servers) || v.servers.length === 0 || v.servers.length > 100_000 || !v.servers.every(isUuid)) {
      throw badEvent('target.servers must be a non-empty list of server UUIDs');
    }
    return { servers: [...new Set(v.servers.map((s: string) => s.toLowerCase()))] };
  }
  if (v.percent !== undefined) return { percent: num(v.percent, 'target.percent', 0, 100, true) };
  if (v.count !== undefined) return { count: int(v.count, 'target.count', 1, 1_000_000) };
  if (v.profile !== undefined) {
    if (typeof v.profile !== 'string' || v.profile.length === 0 || v.profile.length > 100) throw badEvent('target.profile must be a profile name');
    return { profile: v.profile };
  }
  if (v.all !== true) throw badEvent('target.all must be true');
  return { all: true };
}

function validateParams<T extends EventType>(type: T, raw: unknown): ParamsByType[T] {
  if (raw !== undefined && !isObj(raw)) throw badEvent('params must be an object');
  const p: Obj = raw ?? {};
  const where = `params of ${type}`;
  const check = VALIDATORS[type] as (p: Obj, where: string) => ParamsByType[T];
  return check(p, where);
}

function vmPick(p: Obj, where: string, extra: readonly string[]): VmPick {
  onlyKeys(p, where, ['vms', 'percent', ...extra]);
  if (p.vms !== undefined && p.percent !== undefined) throw badEvent(`${where}: give vms or percent, not both`);
  if (p.vms !== undefined) {
    if (!Array.isArray(p.vms) || p.vms.length === 0 || !p.vms.every(isUuid)) throw badEvent('params.vms must be a non-empty list of VM UUIDs');
    return { vms: [...new Set(p.vms.map((s: string) => s.toLowerCase()))] };
  }
  if (p.percent !== undefined) return { percent: num(p.percent, 'params.percent', 0, 100, true) };
  return {};
}

const VALIDATORS: { [T in EventType]: (p: Obj, where: string) => ParamsByType[T] } = {
  offline: (p, where) => {
    onlyKeys(p, where, []);
    return {};
  },
  partition: (p, where) => {
    onlyKeys(p, where, []);
    return {};
  },
  reboot: (p, where) => {
    onlyKeys(p, where, ['bootMs']);
    return p.bootMs === undefined ? {} : { bootMs: ms(p.bootMs, 'params.bootMs') };
  },
  'power-loss': (p, where) => {
    onlyKeys(p, where, ['offMs', 'spreadMs', 'bootMs']);
    const out: ParamsByType['power-loss'] = {};
    if (p.offMs !== undefined) out.offMs = ms(p.offMs, 'params.offMs');
    if (p.spreadMs !== undefined) out.spreadMs = ms(p.spreadMs, 'params.spreadMs');
    if (p.bootMs !== undefined) out.bootMs = ms(p.bootMs, 'params.bootMs');
    return out;
  },
  flap: (p, where) => {
    onlyKeys(p, where, ['periodMs', 'downMs']);
    const periodMs = ms(p.periodMs, 'params.periodMs', 100);
    const downMs = p.downMs === undefined ? Math.round(periodMs / 2) : ms(p.downMs, 'params.downMs', 1);
    if (downMs >= periodMs) throw badEvent('params.downMs must be shorter than params.periodMs');
    return { periodMs, downMs };
  },
  'slow-heartbeat': (p, where) => {
    onlyKeys(p, where, ['lateMs']);
    return { lateMs: ms(p.lateMs, 'params.lateMs', 1) };
  },
  'vm-crash': (p, where) => ({
    ...vmPick(p, where, ['exitStatus']),
    exitStatus: p.exitStatus === undefined ? 1 : int(p.exitStatus, 'params.exitStatus', 0, 255),
  }),
  'vm-reboot': (p, where) => vmPick(p, where, []),
  'zpool-fill': (p, where) => {
    onlyKeys(p, where, ['percent', 'overMs']);
    return { percent: num(p.percent, 'params.percent', 0, 100), overMs: p.overMs === undefined ? 0 : ms(p.overMs, 'params.overMs') };
  },
  'memory-pressure': (p, where) => {
    onlyKeys(p, where, ['availableMiB', 'percentUsed']);
    if ((p.availableMiB === undefined) === (p.percentUsed === undefined)) throw badEvent(`${where}: give availableMiB or percentUsed`);
    if (p.availableMiB !== undefined) return { availableMiB: int(p.availableMiB, 'params.availableMiB', 0, 1 << 30) };
    return { percentUsed: num(p.percentUsed, 'params.percentUsed', 0, 100) };
  },
  'task-fault': (p, where) => {
    onlyKeys(p, where, ['task', 'delayMs', 'error', 'probability', 'hang']);
    const out: ParamsByType['task-fault'] = {};
    if (p.task !== undefined && p.task !== '*') {
      if (typeof p.task !== 'string' || !/^[a-z_]{1,64}$/.test(p.task)) throw badEvent("params.task must be a task name or '*'");
      out.task = p.task;
    }
    if (p.delayMs !== undefined) out.delayMs = ms(p.delayMs, 'params.delayMs');
    if (p.error !== undefined) {
      if (typeof p.error !== 'string' || p.error.length === 0 || p.error.length > 1000) throw badEvent('params.error must be a message of 1 to 1000 characters');
      out.error = p.error;
    }
    if (p.probability !== undefined) out.probability = num(p.probability, 'params.probability', 0, 1);
    if (p.hang !== undefined) {
      if (p.hang !== true && p.hang !== false) throw badEvent('params.hang must be true or false');
      if (p.hang) out.hang = true;
    }
    if (out.delayMs === undefined && out.error === undefined && !out.hang) throw badEvent(`${where}: give delayMs, error or hang`);
    return out;
  },
  'outbound-fault': (p, where) => {
    onlyKeys(p, where, ['api', 'delayMs', 'errorRate', 'probability']);
    const out: ParamsByType['outbound-fault'] = {};
    if (p.api === undefined) throw badEvent("params.api must be cnapi, vmapi, napi or '*'");
    if (p.api !== '*') {
      if (p.api !== 'cnapi' && p.api !== 'vmapi' && p.api !== 'napi') throw badEvent("params.api must be cnapi, vmapi, napi or '*'");
      out.api = p.api as OutboundApi;
    }
    if (p.delayMs !== undefined) out.delayMs = ms(p.delayMs, 'params.delayMs');
    if (p.errorRate !== undefined) out.errorRate = num(p.errorRate, 'params.errorRate', 0, 1);
    if (p.probability !== undefined) out.probability = num(p.probability, 'params.probability', 0, 1);
    if (!out.delayMs && !out.errorRate) throw badEvent(`${where}: give delayMs, errorRate or both`);
    return out;
  },
  timing: (p, where) => {
    onlyKeys(p, where, ['factor', 'profile', 'vms', 'keys']);
    const out: ParamsByType['timing'] = {};
    if (p.factor !== undefined) out.factor = num(p.factor, 'params.factor', 0, 1000, true);
    if (p.profile !== undefined) {
      if (typeof p.profile !== 'string' || !BUILTIN_PROFILES.has(p.profile)) {
        throw badEvent(`params.profile must be a built-in timing profile (${[...BUILTIN_PROFILES.keys()].join(', ')})`);
      }
      out.profile = p.profile;
    }
    if (out.factor === undefined && out.profile === undefined) throw badEvent(`${where}: give factor, profile or both`);
    if (p.vms !== undefined) {
      if (!Array.isArray(p.vms) || p.vms.length === 0 || !p.vms.every(isUuid)) throw badEvent('params.vms must be a non-empty list of VM UUIDs');
      out.vms = [...new Set(p.vms.map((s: string) => s.toLowerCase()))];
    }
    if (p.keys !== undefined) {
      if (!Array.isArray(p.keys) || p.keys.length === 0 || !p.keys.every((k) => typeof k === 'string')) {
        throw badEvent('params.keys must be a non-empty list of timing keys (tasks, vm, cn, workflow, waitlist, or a key under them)');
      }
      const unknown = (p.keys as string[]).filter((k) => !isTimingKeyPrefix(k));
      if (unknown.length > 0) throw badEvent(`params.keys: no timing key ${unknown.map((k) => JSON.stringify(k)).join(', ')} (docs/timing.md lists them)`);
      out.keys = p.keys as string[];
    }
    return out;
  },
};

/** A timing key or a prefix of keys: "tasks", "vm.boot", "tasks.machine_create". */
export function isTimingKeyPrefix(k: string): boolean {
  for (const key of KNOWN_KEYS) if (key === k || key.startsWith(`${k}.`)) return true;
  return false;
}

/** POST /events/marks: {label, source?}. */
export function validateMark(body: unknown): { label: string; source?: EventSource } {
  if (!isObj(body)) throw badEvent('a mark must be a JSON object {label, source?}');
  onlyKeys(body, 'mark', ['label', 'source']);
  if (typeof body.label !== 'string' || body.label.length === 0 || body.label.length > 1000) {
    throw badEvent('label must be a string of 1 to 1000 characters');
  }
  return body.source === undefined ? { label: body.label } : { label: body.label, source: validateSource(body.source) };
}
