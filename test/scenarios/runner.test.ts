/**
 * The runner's promises (docs/scenarios.md, "When steps happen", "Stop and undo"): entries in
 * timeline order, none before its time, each event and creation with its own seed derived from
 * the run's; an interrupted run does nothing more; a failing step stops the run, named.
 */
import { describe, expect, it } from 'vitest';
import { parseScenario } from '../../src/scenarios/parse.js';
import { RunAborted, runScenario, StepFailed, type ScenarioDriver } from '../../src/scenarios/runner.js';
import type { Scenario } from '../../src/scenarios/types.js';

function scenario(text: string): Scenario {
  const r = parseScenario(text, 'runner.yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.scenario;
}

/** A driver that records what it was asked and when (ms into the run). */
function recorder(fail?: string): { driver: ScenarioDriver; calls: { what: string; at: number }[]; begin: () => void } {
  let start = Date.now();
  const calls: { what: string; at: number }[] = [];
  const note = async (what: string): Promise<string> => {
    calls.push({ what, at: Date.now() - start });
    if (fail && what.startsWith(fail)) throw new Error('the daemon said no');
    return what;
  };
  return {
    calls,
    begin: () => (start = Date.now()),
    driver: {
      create: (req) => note(`create ${req.count} seed ${req.seed}`),
      delete: (req) => note(`delete ${'count' in req ? req.count : req.servers.join(',')}`),
      event: (body) => note(`event ${body.type} seed ${body.seed} step ${body.source.step} line ${body.source.line}`),
      mark: (label, source) => note(`mark ${label} ${source.scenario}/${source.step}`),
    },
  };
}

const TEXT = `
name: tracks
steps:
  - mark: a
  - wait: 200ms
  - mark: c
  - at: 100ms
    mark: b
  - at: 300ms
    every: 50ms
    times: 2
    event: { type: reboot, target: { all: true } }
  - create: 2
`;

describe('runScenario', () => {
  it('does each entry in timeline order, never before its time, with its own seed', async () => {
    const r = recorder();
    r.begin();
    const done: number[] = [];
    const outcome = await runScenario(scenario(TEXT), r.driver, { seed: 's', listener: { done: (n) => done.push(n) } });
    expect(r.calls.map((c) => c.what)).toEqual([
      'mark a tracks/1',
      'mark b tracks/4',
      'mark c tracks/3',
      'event reboot seed s:5:0 step 5 line 9',
      'event reboot seed s:5:1 step 5 line 9',
      'create 2 seed s:6:0',
    ]);
    const notBefore = [0, 100, 200, 300, 350, 350];
    r.calls.forEach((c, i) => expect(c.at, c.what).toBeGreaterThanOrEqual(notBefore[i]! - 2));
    // The wait is an entry of its own (shown in the progress), between a and b.
    expect(done).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(outcome.entries).toBe(7);
  });

  it('stops at once when interrupted, and does nothing after', async () => {
    const r = recorder();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(runScenario(scenario(TEXT), r.driver, { seed: 's', signal: controller.signal })).rejects.toBeInstanceOf(RunAborted);
    expect(r.calls.map((c) => c.what)).toEqual(['mark a tracks/1']);
  });

  it('stops at a failing step, naming it and its line', async () => {
    const r = recorder('mark c');
    const err = await runScenario(scenario(TEXT), r.driver, { seed: 's' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StepFailed);
    expect((err as StepFailed).message).toBe('step 3 (line 6) failed: the daemon said no');
    expect(r.calls.map((c) => c.what)).toEqual(['mark a tracks/1', 'mark b tracks/4', 'mark c tracks/3']);
  });

  it('waits, at the end, for the daemon to end the events it started with a duration', async () => {
    const r = recorder();
    const asked: string[][] = [];
    let n = 0;
    const driver: ScenarioDriver = {
      ...r.driver,
      event: async (body) => ({ account: body.type, id: `ev-${++n}` }),
      ended: async (ids) => {
        asked.push([...ids]);
      },
    };
    await runScenario(scenario('- event: { type: offline, target: { all: true }, duration: 10ms }\n- event: { type: reboot, target: { all: true } }\n'), driver, { seed: 's' });
    // Only the event with a duration (the reboot acts once and ends by itself).
    expect(asked).toEqual([['ev-1']]);
  });

  it('lasts until the last event with a duration has ended', async () => {
    const r = recorder();
    const started = Date.now();
    const drains: number[] = [];
    await runScenario(scenario('- event: { type: offline, target: { all: true }, duration: 300ms }\n'), r.driver, {
      seed: 's',
      listener: { draining: (ms) => drains.push(ms) },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(298);
    expect(drains).toHaveLength(1);
  });
});
