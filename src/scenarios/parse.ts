/**
 * From the text of a scenario file to a checked Scenario, or to the list of every problem in
 * it, each at its line and column. Nothing is run and nothing is asked of a daemon here: the
 * checks against a running fleet are in fleet-check.ts.
 *
 * The timeline: a step happens at its `at`, or else when the step before it (in the file)
 * ends: a wait ends after its duration, a repeated step after its last repetition, any other
 * step as it starts. So steps written one after another run in order, and `at` starts a
 * parallel track.
 */
import path from 'node:path';
import { isMap, isSeq, type Node } from 'yaml';
import { HOSTNAME_PREFIX_RE, MAX_CREATE_COUNT } from '../daemon/create-request.js';
import { readEvent, type EventKnowledge } from './events.js';
import { describe as show, readYaml, type YamlReader as Reader } from '../common/yaml-reader.js';
import { isUuid } from '../common/uuid.js';
import type { Action, Scenario, ScenarioProblem, SourcePos, Step } from './types.js';

export const ACTIONS = ['create', 'delete', 'event', 'wait', 'mark'] as const;
const TIMING = ['at', 'every', 'times'] as const;
const MAX_TIMES = 10_000;
const MAX_CREATE = MAX_CREATE_COUNT;

export type ParseResult = { ok: true; scenario: Scenario } | { ok: false; problems: ScenarioProblem[] };

/**
 * Read a scenario. `fileName` gives the default name; `known` what can be checked without a
 * daemon (cn-agent's task names).
 */
export function parseScenario(text: string, fileName: string, known: EventKnowledge = {}): ParseResult {
  const parsed = readYaml(text);
  if (!parsed.ok) return parsed;
  const r = parsed.reader;
  const root = parsed.root;
  let name = path.basename(fileName).replace(/\.(ya?ml)$/i, '');
  let seed: string | undefined;
  let stepsNode: Node | null = null;
  if (isSeq(root)) {
    stepsNode = root;
  } else if (isMap(root)) {
    const e = r.entries(root, 'a scenario')!;
    r.onlyKeys(e, ['name', 'description', 'seed', 'steps'], 'a scenario');
    const n = e.get('name');
    if (n) name = r.string(n.value, 'name', n.key) ?? name;
    const d = e.get('description');
    if (d) r.string(d.value, 'description', d.key);
    const s = e.get('seed');
    if (s) seed = r.string(s.value, 'seed', s.key);
    const st = e.get('steps');
    if (!st) r.problem(root, 'a scenario needs "steps": the list of what to do');
    else stepsNode = st.value ?? st.key;
  } else {
    r.problem(root, 'a scenario is a list of steps, or a mapping with "steps" (and "name", "seed", "description")');
  }
  const steps: Step[] = [];
  if (stepsNode && !isSeq(stepsNode)) r.problem(stepsNode, `"steps" must be a list of steps, not ${show(stepsNode)}`);
  else if (stepsNode && stepsNode.items.length === 0) r.problem(stepsNode, 'the scenario has no steps');
  else if (stepsNode) {
    let cursor = 0;
    (stepsNode.items as (Node | null)[]).forEach((node, i) => {
      const step = readStep(r, node, i + 1, cursor, stepsNode!, known);
      if (step) {
        steps.push(step);
        cursor = stepEnd(step);
      }
    });
  }
  if (r.problems.length > 0) return { ok: false, problems: sortProblems(r.problems) };
  return { ok: true, scenario: { name, ...(seed !== undefined ? { seed } : {}), steps } };
}

/** When a step ends, for the step after it: see the module comment. */
export function stepEnd(step: Step): number {
  const last = step.atMs + (step.repeat ? (step.repeat.times - 1) * step.repeat.everyMs : 0);
  return last + (step.action.kind === 'wait' ? step.action.ms : 0);
}

function readStep(r: Reader, node: Node | null, index: number, cursor: number, list: Node, known: EventKnowledge): Step | undefined {
  const e = r.entries(node, `step ${index}`, list);
  if (!e) return undefined;
  const before = r.problems.length;
  const strays = r.onlyKeys(e, [...TIMING, ...ACTIONS], 'a step');
  // In the order written, so the complaint points at the second action in the file.
  const actions = [...e.keys()].filter((k): k is (typeof ACTIONS)[number] => (ACTIONS as readonly string[]).includes(k));
  if (actions.length === 0) {
    if (!strays) r.problem(node, `step ${index} does nothing: give it one of ${ACTIONS.join(', ')}`);
    return undefined;
  }
  if (actions.length > 1) {
    r.problem(e.get(actions[1]!)!.key, `a step does one thing; step ${index} has ${actions.join(' and ')}: make them separate steps`);
    return undefined;
  }
  const pos = r.pos(node, list);
  let atMs = cursor;
  const at = e.get('at');
  if (at) atMs = r.duration(at.value, 'at', {}, at.key) ?? cursor;
  let repeat: Step['repeat'];
  const every = e.get('every');
  const times = e.get('times');
  if (every || times) {
    if (!every) r.problem(times!.key, '"times" needs "every" (how far apart the repetitions are)');
    else if (!times) r.problem(every.key, '"every" needs "times" (how many repetitions)');
    else if (actions[0] === 'wait') r.problem(every.key, 'a wait does not repeat');
    else {
      const everyMs = r.duration(every.value, 'every', { min: 1 }, every.key);
      const n = r.integer(times.value, 'times', 1, MAX_TIMES, times.key);
      if (everyMs !== undefined && n !== undefined) repeat = { everyMs, times: n };
    }
  }
  const kind = actions[0]!;
  const { key: actionKey, value } = e.get(kind)!;
  let action: Action | undefined;
  let targetPos: SourcePos | undefined;
  switch (kind) {
    case 'create':
      action = readCreate(r, value, actionKey);
      break;
    case 'delete':
      action = readDelete(r, value, actionKey);
      targetPos = r.pos(value, actionKey);
      break;
    case 'wait': {
      const ms = r.duration(value, 'wait', {}, actionKey);
      if (ms !== undefined) action = { kind: 'wait', ms };
      break;
    }
    case 'mark': {
      const label = r.string(value, 'mark (its label)', actionKey);
      if (label !== undefined) action = { kind: 'mark', label };
      break;
    }
    case 'event': {
      const ev = readEvent(r, value, actionKey, known);
      if (ev) {
        action = { kind: 'event', event: ev.spec };
        targetPos = ev.targetPos;
      }
      break;
    }
  }
  if (!action || r.problems.length > before) return undefined;
  return { index, pos, atMs, ...(repeat ? { repeat } : {}), action, ...(targetPos ? { targetPos } : {}) };
}

/** `create: 10`, or `create: {count, profile | mix, hostnamePrefix}`. */
function readCreate(r: Reader, node: Node | null, key: Node): Action | undefined {
  if (!isMap(node)) {
    const count = r.integer(node, 'create (a count of CNs)', 1, MAX_CREATE, key);
    return count === undefined ? undefined : { kind: 'create', count };
  }
  const e = r.entries(node, 'create', key)!;
  r.onlyKeys(e, ['count', 'profile', 'mix', 'hostnamePrefix'], 'create');
  const c = e.get('count');
  if (!c) {
    r.problem(node, 'create needs a "count"');
    return undefined;
  }
  const count = r.integer(c.value, 'create count', 1, MAX_CREATE, c.key);
  const out: Action = { kind: 'create', count: count ?? 0 };
  const profile = e.get('profile');
  const mix = e.get('mix');
  if (profile && mix) r.problem(mix.key, 'create takes a "profile" or a "mix", not both');
  if (profile) {
    const s = r.string(profile.value, 'create profile', profile.key);
    if (s !== undefined) out.profile = s;
  }
  if (mix) {
    const read = readMix(r, mix.value, mix.key);
    if (read) {
      out.mix = read.text;
      out.mixWeights = read.weights;
    }
  }
  const prefix = e.get('hostnamePrefix');
  if (prefix) {
    const s = r.string(prefix.value, 'create hostnamePrefix', prefix.key);
    if (s !== undefined && !HOSTNAME_PREFIX_RE.test(s)) r.problem(prefix.value, 'create hostnamePrefix must be 1-16 letters, digits or dashes, starting with a letter');
    else if (s !== undefined) out.hostnamePrefix = s;
  }
  return count === undefined ? undefined : out;
}

/** A mix as create-servers --mix takes it: "small:70,large:30", or a mapping {small: 70, large: 30}. */
function readMix(r: Reader, node: Node | null, key: Node): { text: string; weights: Record<string, number> } | undefined {
  const weights: Record<string, number> = {};
  if (isMap(node)) {
    const e = r.entries(node, 'create mix', key)!;
    for (const [name, { value }] of e) {
      const w = r.number(value, `mix weight of ${name}`, (v) => v > 0, 'a number above 0', key);
      if (w !== undefined) weights[name] = w;
    }
  } else {
    const s = r.scalar(node);
    const parts = typeof s === 'string' ? s.split(',').map((x) => x.trim()) : [];
    const bad = parts.length === 0 || parts.some((x) => !/^[A-Za-z0-9][A-Za-z0-9_.-]*:\d+(?:\.\d+)?$/.test(x) || Number(x.split(':')[1]) <= 0);
    if (bad) {
      r.problem(node, `create mix must read profile:weight,... (e.g. "small:70,large:30"), not ${show(node)}`, key);
      return undefined;
    }
    for (const x of parts) {
      const [name, w] = x.split(':') as [string, string];
      if (name in weights) {
        r.problem(node, `create mix names ${name} twice`, key);
        return undefined;
      }
      weights[name] = Number(w);
    }
  }
  if (Object.keys(weights).length === 0) {
    r.problem(node, 'create mix names no profile', key);
    return undefined;
  }
  return {
    text: Object.entries(weights)
      .map(([n, w]) => `${n}:${w}`)
      .join(','),
    weights,
  };
}

/** `delete: 3` (the 3 newest CNs), `delete: {count: 3}` or `delete: {servers: [uuid, ...]}`. */
function readDelete(r: Reader, node: Node | null, key: Node): Action | undefined {
  if (!isMap(node)) {
    const count = r.integer(node, 'delete (a count of the newest CNs)', 1, MAX_CREATE, key);
    return count === undefined ? undefined : { kind: 'delete', count };
  }
  const e = r.entries(node, 'delete', key)!;
  r.onlyKeys(e, ['count', 'servers'], 'delete');
  const c = e.get('count');
  const s = e.get('servers');
  if ((c ? 1 : 0) + (s ? 1 : 0) !== 1) {
    r.problem(node, 'delete names its CNs in exactly one way: "count" (the newest) or "servers" (UUIDs)');
    return undefined;
  }
  if (c) {
    const count = r.integer(c.value, 'delete count', 1, MAX_CREATE, c.key);
    return count === undefined ? undefined : { kind: 'delete', count };
  }
  const servers = r.list(s!.value, 'delete servers', (n) => {
    const v = r.scalar(n);
    if (typeof v === 'string' && isUuid(v)) return v.toLowerCase();
    r.problem(n, `${show(n)} is not a server UUID`, s!.value);
    return undefined;
  }, s!.key);
  return servers ? { kind: 'delete', servers: [...new Set(servers)] } : undefined;
}


function sortProblems(ps: ScenarioProblem[]): ScenarioProblem[] {
  return [...ps].sort((a, b) => a.line - b.line || a.col - b.col);
}
