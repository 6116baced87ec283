/**
 * Where a timing applies, and what is refused before anything changes: `--timing` (a bad
 * timing file stops the config with its lines), a hardware profile's `timing:` (a bad one
 * stops the profile files' load, naming the profile's file), a scenario's timing step (its
 * problems at their lines), and the events API's timing event.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/daemon/config.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { validateEvent } from '../../src/events/validate.js';
import { loadProfileFiles } from '../../src/mockcn/profile-files.js';
import { parseScenario } from '../../src/scenarios/parse.js';

let dir: string;
beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-timing-where-'));
});
afterEach(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

describe('--timing', () => {
  it('takes a built-in name or a timing file, and refuses a bad one with its lines', async () => {
    const ok = await resolveConfig({ flags: { dataDir: dir, timing: 'smartos' }, env: {}, mdata: noMdata });
    expect(ok.timingProfile?.name).toBe('smartos');
    const file = path.join(dir, 'bad.yaml');
    await fsp.writeFile(file, 'extends: smartos\nvm:\n  boot: {p50: 2s, p99: 1s}\ntasks:\n  machine_create:\n    unzip: 1s\n');
    await expect(resolveConfig({ flags: { dataDir: dir, timing: file }, env: {}, mdata: noMdata })).rejects.toThrow(
      /bad\.yaml:3:\d+: vm\.boot: p99 \(1000 ms\) is below p50 \(2000 ms\)[\s\S]*bad\.yaml:6:\d+: unknown key "unzip"/,
    );
    await expect(resolveConfig({ flags: { dataDir: dir }, env: { MOCKCLOUD_TIMING: 'realtime' }, mdata: noMdata })).rejects.toThrow(
      /no built-in profile \(instant, smartos\)/,
    );
  });
});

describe("a hardware profile's timing", () => {
  it('names a timing profile or file; a bad one stops the load at the profile file', async () => {
    await fsp.mkdir(path.join(dir, 'timing'));
    await fsp.writeFile(path.join(dir, 'timing', 'slow.yaml'), 'extends: smartos\nscale: 2\n');
    await fsp.writeFile(path.join(dir, 'a.yaml'), 'name: slowbox\ntiming: timing/slow.yaml\n');
    const profiles = await loadProfileFiles(dir, true);
    expect(profiles.find((p) => p.name === 'slowbox')?.timing).toBe('timing/slow.yaml');
    await fsp.writeFile(path.join(dir, 'timing', 'slow.yaml'), 'extends: smartos\nscale: -2\n');
    await expect(loadProfileFiles(dir, true)).rejects.toThrow(/a\.yaml:1: timing "timing\/slow.yaml": timing file .*slow\.yaml is not valid:[\s\S]*slow\.yaml:2:\d+: scale must be a number over 0/);
  });
});

describe('timing events and scenario steps', () => {
  it('read a timing step with its params, and its problems at their lines', () => {
    const r = parseScenario(
      '- event: { type: timing, target: { profile: rack-a }, duration: 10m, params: { factor: 5, keys: [tasks] } }\n',
      's.yaml',
    );
    expect(r.ok && r.scenario.steps[0]!.action).toEqual({
      kind: 'event',
      event: { type: 'timing', target: { profile: 'rack-a' }, durationMs: 600_000, params: { factor: 5, keys: ['tasks'] } },
    });
    const bad = parseScenario('- wait: 1s\n- event: { type: timing, target: { all: true }, params: { factor: 0, keys: [tasks.unzip] } }\n', 's.yaml');
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.problems.map((p) => p.line)).toEqual([2, 2]);
      expect(bad.problems.map((p) => p.message).join(' | ')).toMatch(/factor must be a number over 0[\s\S]*"tasks\.unzip" is no timing key/);
    }
  });

  it('are refused by the events API without factor or profile, with an unknown key or profile', () => {
    const body = (params: unknown) => ({ type: 'timing', target: { all: true }, params });
    expect(() => validateEvent(body({}))).toThrow(/give factor, profile or both/);
    expect(() => validateEvent(body({ factor: 2, keys: ['vm.bake'] }))).toThrow(/no timing key "vm.bake"/);
    expect(() => validateEvent(body({ profile: 'solaris' }))).toThrow(/built-in timing profile/);
    expect(validateEvent({ ...body({ factor: 3, vms: ['AF6C8B2A-0000-4000-8000-000000000001'] }), durationMs: 1000 }).params).toEqual({
      factor: 3,
      vms: ['af6c8b2a-0000-4000-8000-000000000001'],
    });
  });
});
