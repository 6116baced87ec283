/**
 * Scenario files as docs/scenarios.md describes them: what a file means (the timeline, the
 * POST /events bodies it sends, the seeds), and every mistake named at its line and column.
 */
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/common/duration.js';
import { checkAgainstFleet } from '../../src/scenarios/fleet-check.js';
import { parseScenario } from '../../src/scenarios/parse.js';
import { entrySeed } from '../../src/scenarios/runner.js';
import { scenarioLength, timeline } from '../../src/scenarios/timeline.js';
import type { Scenario } from '../../src/scenarios/types.js';

function ok(text: string): Scenario {
  const r = parseScenario(text, 'test.yaml', { taskNames: ['machine_create', 'machine_boot'] });
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.scenario;
}

function problems(text: string): string[] {
  const r = parseScenario(text, 'test.yaml', { taskNames: ['machine_create', 'machine_boot'] });
  expect(r.ok).toBe(false);
  return r.ok ? [] : r.problems.map((p) => `${p.line}:${p.col} ${p.message}`);
}

describe('durations', () => {
  it('reads a number and a unit, and sums of them', () => {
    expect(parseDuration('500ms')).toEqual({ ms: 500 });
    expect(parseDuration('30s')).toEqual({ ms: 30_000 });
    expect(parseDuration('5m')).toEqual({ ms: 300_000 });
    expect(parseDuration('1h')).toEqual({ ms: 3_600_000 });
    expect(parseDuration('1m30s')).toEqual({ ms: 90_000 });
    expect(parseDuration('1.5s')).toEqual({ ms: 1500 });
  });

  it('refuses a bare number, an unknown unit and more than a week', () => {
    expect(parseDuration('30')).toHaveProperty('error', expect.stringContaining('no unit'));
    expect(parseDuration('5x')).toHaveProperty('error', expect.stringContaining('not a duration'));
    expect(parseDuration('-5s')).toHaveProperty('error');
    expect(parseDuration('200h')).toHaveProperty('error', expect.stringContaining('week'));
  });
});

describe('the timeline', () => {
  it('runs steps in file order, a step starting when the one before ends (waits and repeats included)', () => {
    const s = ok(`
steps:
  - mark: a
  - wait: 10s
  - every: 1m
    times: 3
    event: { type: reboot, target: { percent: 10 } }
  - mark: b
`);
    expect(s.steps.map((x) => x.atMs)).toEqual([0, 0, 10_000, 130_000]);
    const t = timeline(s);
    expect(t.map((e) => [e.step.index, e.rep, e.atMs])).toEqual([
      [1, 0, 0],
      [2, 0, 0],
      [3, 0, 10_000],
      [3, 1, 70_000],
      [3, 2, 130_000],
      [4, 0, 130_000],
    ]);
  });

  it('`at` puts a step on a parallel track; its followers go after it; the run lasts until the last event ends', () => {
    const s = ok(`
- wait: 5m
- at: 30s
  event: { type: offline, target: { count: 1 }, duration: 2m }
- mark: after-offline
- at: 10s
  mark: early
`);
    const t = timeline(s);
    expect(t.map((e) => `${e.atMs / 1000}:${e.step.index}`)).toEqual(['0:1', '10:4', '30:2', '30:3']);
    expect(scenarioLength(t)).toBe(300_000);
    const longer = ok(`
- event: { type: offline, target: { all: true }, duration: 10m }
`);
    expect(scenarioLength(timeline(longer))).toBe(600_000);
  });

  it('gives each repetition its own seed from the run seed, the same for the same seed', () => {
    const t = timeline(ok(`
- every: 1s
  times: 2
  event: { type: reboot, target: { percent: 10 } }
`));
    expect(t.map((e) => entrySeed('42', e))).toEqual(['42:1:0', '42:1:1']);
  });
});

describe('events as POST /events takes them', () => {
  it('writes durations as words and sends them as milliseconds', () => {
    const s = ok(`
name: storm
seed: 7
steps:
  - event:
      type: flap
      target: { profile: small }
      duration: 10m
      params: { period: 1m, down: 20s }
  - event:
      type: task-fault
      target: { servers: [4C4C4544-0000-4000-8000-000000000001] }
      params: { task: machine_create, delay: 2s, probability: 0.5 }
  - event: { type: zpool-fill, target: { count: 1 }, params: { percent: 95, over: 5m } }
  - event: { type: vm-crash, target: { all: true }, params: { percent: 20, exitStatus: 137 } }
  - event: { type: outbound-fault, target: { percent: 50 }, params: { api: vmapi, errorRate: 0.1 } }
  - event: { type: memory-pressure, target: { count: 2 }, params: { percentUsed: 95 }, duration: 1h }
  - event: { type: reboot, target: { count: 1 }, params: { boot: 30s } }
  - event: { type: task-fault, target: { all: true }, params: { hang: true }, duration: 2m }
`);
    expect(s.name).toBe('storm');
    expect(s.seed).toBe('7');
    const bodies = s.steps.map((x) => (x.action.kind === 'event' ? x.action.event : undefined));
    expect(bodies).toEqual([
      { type: 'flap', target: { profile: 'small' }, durationMs: 600_000, params: { periodMs: 60_000, downMs: 20_000 } },
      { type: 'task-fault', target: { servers: ['4c4c4544-0000-4000-8000-000000000001'] }, params: { task: 'machine_create', delayMs: 2000, probability: 0.5 } },
      { type: 'zpool-fill', target: { count: 1 }, params: { percent: 95, overMs: 300_000 } },
      { type: 'vm-crash', target: { all: true }, params: { percent: 20, exitStatus: 137 } },
      { type: 'outbound-fault', target: { percent: 50 }, params: { api: 'vmapi', errorRate: 0.1 } },
      { type: 'memory-pressure', target: { count: 2 }, durationMs: 3_600_000, params: { percentUsed: 95 } },
      { type: 'reboot', target: { count: 1 }, params: { bootMs: 30_000 } },
      { type: 'task-fault', target: { all: true }, durationMs: 120_000, params: { hang: true } },
    ]);
  });

  it('reads create and delete in their short and long forms', () => {
    const s = ok(`
- create: 3
- create: { count: 5, mix: "small:70, large:30" }
- create: { count: 1, mix: { small: 1 } }
- delete: 2
- delete: { servers: [4c4c4544-0000-4000-8000-000000000001] }
`);
    expect(s.steps.map((x) => x.action)).toEqual([
      { kind: 'create', count: 3 },
      { kind: 'create', count: 5, mix: 'small:70,large:30', mixWeights: { small: 70, large: 30 } },
      { kind: 'create', count: 1, mix: 'small:1', mixWeights: { small: 1 } },
      { kind: 'delete', count: 2 },
      { kind: 'delete', servers: ['4c4c4544-0000-4000-8000-000000000001'] },
    ]);
  });
});

describe('mistakes, each at its line', () => {
  it('an unknown step, with a suggestion', () => {
    expect(problems('steps:\n  - mark: a\n  - creat: 3\n')).toEqual([expect.stringMatching(/^3:5 unknown key "creat" in a step \(did you mean "create"\?\)/)]);
  });

  it('a bad duration, anywhere a duration goes', () => {
    const p = problems(`
- wait: 30
- at: soon
  mark: x
- every: 0s
  times: 2
  mark: y
- event: { type: offline, target: { all: true }, duration: 5 minutes }
- event: { type: flap, target: { all: true }, params: { period: 10s, down: 10s } }
`);
    expect(p).toEqual([
      expect.stringMatching(/^2:9 wait: duration "30" has no unit/),
      expect.stringMatching(/^3:7 at: "soon" is not a duration/),
      expect.stringMatching(/^5:10 every must be longer than 0/),
      expect.stringMatching(/^8:60 duration: "5 minutes" is not a duration/),
      expect.stringMatching(/^9:76 params.down must be shorter than params.period/),
    ]);
  });

  it('unknown event types and params, params a type does not take, targets that are not one', () => {
    const p = problems(`
- event: { type: explode, target: { all: true } }
- event: { type: reboot, target: { all: true }, duration: 1m }
- event: { type: offline, target: { all: true }, params: { late: 1s } }
- event: { type: task-fault, target: { all: true }, params: { task: machine_crate, delay: 1s } }
- event: { type: task-fault, target: { all: true }, params: { task: machine_create } }
- event: { type: offline, target: { all: true, percent: 5 } }
- event: { type: offline, target: { percent: 150 } }
- event: { type: offline }
- event: { type: offline, target: { servers: [cn1] } }
`);
    expect(p).toEqual([
      expect.stringMatching(/^2:18 unknown event type "explode"; the types are offline, partition/),
      expect.stringMatching(/^3:49 a reboot event takes no "duration"/),
      expect.stringMatching(/^4:60 unknown key "late" in the offline event's params/),
      expect.stringMatching(/^5:69 cn-agent has no task "machine_crate"/),
      expect.stringMatching(/^6:61 the task-fault event does nothing without one of params.delay, params.error, params.hang/),
      expect.stringMatching(/^7:35 a target names its servers in exactly one way .* this one gives percent and all|^7:35 a target names its servers in exactly one way .* this one gives all and percent/),
      expect.stringMatching(/^8:46 target percent must be a number above 0 and at most 100, not 150/),
      expect.stringMatching(/^9:10 the offline event needs a "target"/),
      expect.stringMatching(/^10:47 "cn1" is not a server UUID/),
    ]);
  });

  it('YAML syntax errors, with the line and column the parser stopped at', () => {
    expect(problems('steps:\n  - mark: a\n  - wait: [1s\n')).toEqual([expect.stringMatching(/^4:1 YAML syntax error: /)]);
    expect(problems('steps:\n  - mark: a\n    mark: b\n')).toEqual([expect.stringMatching(/^3:5 YAML syntax error: Map keys must be unique/)]);
  });

  it('a step that does two things, or nothing; timing keys that need each other', () => {
    expect(problems('- mark: a\n  wait: 1s\n')).toEqual([expect.stringMatching(/^2:3 a step does one thing; step 1 has mark and wait/)]);
    expect(problems('- at: 1s\n')).toEqual([expect.stringMatching(/^1:3 step 1 does nothing/)]);
    expect(problems('- every: 1s\n  mark: a\n')).toEqual([expect.stringMatching(/^1:3 "every" needs "times"/)]);
    expect(problems('- every: 1s\n  times: 2\n  wait: 1s\n')).toEqual([expect.stringMatching(/^1:3 a wait does not repeat/)]);
    expect(problems('steps: []\n')).toEqual([expect.stringMatching(/^1:8 the scenario has no steps/)]);
  });
});

describe('targets against the fleet', () => {
  const HN = '00000000-0000-4000-8000-0000000000aa';
  const A = '00000000-0000-4000-8000-000000000001';
  const B = '00000000-0000-4000-8000-000000000002';
  const fleet = { servers: [{ uuid: HN, headnode: true }, { uuid: A }, { uuid: B }], profiles: ['virtual', 'small', 'large'] };

  function check(text: string, f = fleet): string[] {
    return checkAgainstFleet(ok(text), f).map((p) => `${p.line}:${p.col} ${p.message}`);
  }

  it('passes targets that match', () => {
    expect(check(`
- event: { type: offline, target: { servers: [${A}] } }
- event: { type: reboot, target: { profile: small } }
- delete: { servers: [${B}] }
- event: { type: reboot, target: { percent: 50 } }
`)).toEqual([]);
  });

  it('names a server not in the fleet, the headnode, one deleted before, an unknown profile', () => {
    expect(check(`
- event: { type: offline, target: { servers: [00000000-0000-4000-8000-00000000ffff] } }
- event: { type: offline, target: { servers: [${HN}] } }
- delete: { servers: [${A}] }
- event: { type: offline, target: { servers: [${A}] } }
- event: { type: offline, target: { profile: storage } }
- create: { count: 1, mix: "small:1,huge:2" }
`)).toEqual([
      expect.stringMatching(/^2:35 server 00000000-0000-4000-8000-00000000ffff is not one of the daemon's mock CNs/),
      expect.stringMatching(/^3:35 server .* is the dev DC's headnode server: it is never the target of an event/),
      expect.stringMatching(/^5:35 server .* is deleted by step 3 \(line 4\) before this step/),
      expect.stringMatching(/^6:35 target profile "storage" matches nothing: the daemon has no such profile \(its profiles: virtual, small, large\)/),
      expect.stringMatching(/^7:3 the daemon has no profile "huge"/),
    ]);
  });

  it('counts the CNs the scenario creates and deletes before a target', () => {
    const empty = { servers: [{ uuid: HN, headnode: true }], profiles: ['virtual'] };
    expect(check(`
- event: { type: reboot, target: { percent: 10 } }
- create: 2
- event: { type: reboot, target: { percent: 10 } }
- delete: 2
- event: { type: reboot, target: { all: true } }
`, empty)).toEqual([
      expect.stringMatching(/^2:34 the target matches no server: the fleet has no CNs at 0s/),
      expect.stringMatching(/^6:34 the target matches no server: the fleet has no CNs at 0s/),
    ]);
  });
});
