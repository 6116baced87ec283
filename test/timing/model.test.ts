/**
 * The timing model on its own: figures and their draws, timing files with every problem at
 * its line, the built-in profiles against the catalogue, seeded draws and events' adjustments.
 */
import { describe, expect, it } from 'vitest';
import { TASK_REGISTRY } from '../../src/agents/cn-agent/tasks/index.js';
import { randomStream } from '../../src/common/seeded-random.js';
import {
  BUILTIN_PROFILES,
  drawMs,
  FIGURE_BRANDS,
  figureOf,
  INSTANT,
  KNOWN_KEYS,
  logNormal,
  parseTimingFile,
  SMARTOS,
  TASK_NAMES,
  Timing,
  uniform,
  type TimingProfile,
} from '../../src/timing/index.js';
import { ALL_BRANDS } from '../../src/vmadm/properties.js';

const parse = (text: string) => parseTimingFile(text, 'test.yaml', BUILTIN_PROFILES);
const problemsOf = (text: string) => {
  const r = parse(text);
  if (r.ok) throw new Error('expected problems');
  return r.problems;
};
const profileOf = (text: string): TimingProfile => {
  const r = parse(text);
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.profile;
};

describe('figures', () => {
  it('a log-normal figure draws around its p50 with about 1% beyond its p99', () => {
    const s = randomStream('figures', 'test');
    const f = logNormal(1000, 5000);
    const draws = Array.from({ length: 20_000 }, () => drawMs(f, () => s.next())).sort((a, b) => a - b);
    const p50 = draws[10_000]!;
    const p99 = draws[19_800]!;
    expect(p50).toBeGreaterThan(950);
    expect(p50).toBeLessThan(1050);
    expect(p99).toBeGreaterThan(4300);
    expect(p99).toBeLessThan(5800);
  });

  it('a uniform figure stays within its bounds; a rate adds bytes / rate; a brand has its own figure', () => {
    const s = randomStream('figures', 'uniform');
    for (let i = 0; i < 1000; i++) {
      const ms = drawMs(uniform(200, 300), () => s.next());
      expect(ms).toBeGreaterThanOrEqual(200);
      expect(ms).toBeLessThan(300);
    }
    const p = profileOf('tasks:\n  image_ensure_present:\n    import: {fixed: 1s, rate: 1MB/s}\nvm:\n  boot: {fixed: 2s, brands: {bhyve: 10s}}\n');
    expect(drawMs(figureOf(p, 'tasks.image_ensure_present.import'), Math.random, { bytes: 5e6 })).toBe(6000);
    expect(drawMs(figureOf(p, 'vm.boot'), Math.random, { brand: 'joyent' })).toBe(2000);
    expect(drawMs(figureOf(p, 'vm.boot'), Math.random, { brand: 'bhyve' })).toBe(10_000);
  });
});

describe('the built-in profiles', () => {
  it('name every cn-agent task, and hold a figure for every key', () => {
    expect([...TASK_NAMES].sort()).toEqual([...TASK_REGISTRY.keys()].sort());
    for (const p of [INSTANT, SMARTOS]) for (const key of KNOWN_KEYS) expect(p.figures.has(key), `${p.name} ${key}`).toBe(true);
    expect([...FIGURE_BRANDS]).toEqual([...ALL_BRANDS]);
  });

  it('instant waits for nothing but a CN boot; smartos keeps a VM provisioning for seconds', () => {
    expect(INSTANT.instant).toBe(true);
    expect(SMARTOS.instant).toBe(false);
    const t = new Timing({ profile: SMARTOS, seed: 's' });
    expect(t.ms('vm.provision', { server: 'a' })).toBeGreaterThan(1000);
    expect(new Timing({ profile: INSTANT }).ms('tasks.machine_create.create_machine', { server: 'a' })).toBe(0);
  });
});

describe('timing files', () => {
  it('override the figures they write on the profile they extend, scaled', () => {
    const p = profileOf(
      [
        'name: fast-smartos',
        'extends: smartos',
        'scale: 0.5',
        'tasks:',
        '  machine_create:',
        '    pre_check: 250ms',
        '  nop: {min: 10ms, max: 20ms}',
        'cn:',
        '  boot: {p50: 1m, p99: 3m}',
      ].join('\n'),
    );
    expect(p.name).toBe('fast-smartos');
    expect(figureOf(p, 'tasks.machine_create.pre_check').spread).toEqual({ kind: 'fixed', ms: 250 });
    expect(figureOf(p, 'tasks.nop.run').spread).toEqual({ kind: 'uniform', minMs: 10, maxMs: 20 });
    expect(figureOf(p, 'cn.boot').spread).toEqual({ kind: 'lognormal', p50Ms: 60_000, p99Ms: 180_000 });
    const smartosProvision = figureOf(SMARTOS, 'vm.provision').spread as { p50Ms: number };
    expect((figureOf(p, 'vm.provision').spread as { p50Ms: number }).p50Ms).toBe(smartosProvision.p50Ms / 2);
  });

  it('are refused whole, each problem at its line: negative, p99 below p50, unknown task or phase, rate 0', () => {
    const problems = problemsOf(
      [
        'extends: smartos', // 1
        'tasks:', // 2
        '  machine_create:', // 3
        '    pre_check: -2s', // 4
        '    fetch_dataset: {p50: 5s, p99: 1s}', // 5
        '    unpack: 1s', // 6
        '  machine_creat: 1s', // 7
        '  image_ensure_present:', // 8
        '    import: {fixed: 1s, rate: 0MB/s}', // 9
        'vm:', // 10
        '  boot: {min: 3s, max: 1s}', // 11
        '  bake: 1s', // 12
        '  install: {fixed: 1s, rate: 1MB/s}', // 13
      ].join('\n'),
    );
    const at = (line: number) => problems.filter((p) => p.line === line).map((p) => p.message).join(' | ');
    expect(at(4)).toMatch(/must not be negative/);
    expect(at(5)).toMatch(/p99 \(1000 ms\) is below p50 \(5000 ms\)/);
    expect(at(6)).toMatch(/unknown key "unpack" in task machine_create's phases/);
    expect(at(7)).toMatch(/unknown key "machine_creat" in tasks \(did you mean "machine_create"\?\)/);
    expect(at(9)).toMatch(/rate of tasks.image_ensure_present.import must be more than 0/);
    expect(at(11)).toMatch(/max \(1000 ms\) is below min \(3000 ms\)/);
    expect(at(12)).toMatch(/unknown key "bake" in vm/);
    expect(at(13)).toMatch(/vm.install moves no bytes/);
  });

  it('name an unknown profile to extend, and a bad scale', () => {
    const problems = problemsOf('extends: solaris\nscale: 0\n');
    expect(problems.map((p) => [p.line, p.message])).toEqual([
      [1, expect.stringMatching(/no built-in timing profile "solaris"; known: instant, smartos/)],
      [2, expect.stringMatching(/scale must be a number over 0/)],
    ]);
  });
});

describe('Timing', () => {
  it('draws the same durations from the same seed, per CN, whatever other CNs draw', () => {
    const a = new Timing({ profile: SMARTOS, seed: '42' });
    const b = new Timing({ profile: SMARTOS, seed: '42' });
    const c = new Timing({ profile: SMARTOS, seed: '43' });
    b.ms('vm.boot', { server: 'other' });
    const draw = (t: Timing) => [1, 2, 3].map(() => t.ms('tasks.machine_create.fetch_dataset', { server: 'cn1', bytes: 1e8 }));
    const da = draw(a);
    expect(draw(b)).toEqual(da);
    expect(draw(c)).not.toEqual(da);
  });

  it('applies an adjustment to its servers, VMs and keys only, until it is undone', () => {
    const fixed = profileOf('tasks:\n  nop: 100ms\nvm:\n  boot: 1s\n');
    const slow = profileOf('vm:\n  boot: 9s\n');
    const t = new Timing({ profile: fixed });
    const undo = t.adjust({ servers: new Set(['rack']), keys: ['tasks'], factor: 5 });
    expect(t.ms('tasks.nop.run', { server: 'rack' })).toBe(500);
    expect(t.ms('tasks.nop.run', { server: 'elsewhere' })).toBe(100);
    expect(t.ms('vm.boot', { server: 'rack' })).toBe(1000);
    const undoVm = t.adjust({ vms: new Set(['vm1']), profile: slow });
    expect(t.ms('vm.boot', { server: 'rack', vm: 'vm1' })).toBe(9000);
    expect(t.ms('vm.boot', { server: 'rack', vm: 'vm2' })).toBe(1000);
    undo();
    undoVm();
    expect(t.ms('tasks.nop.run', { server: 'rack' })).toBe(100);
    expect(t.ms('vm.boot', { server: 'rack', vm: 'vm1' })).toBe(1000);
  });

  it("takes a CN's own profile (its hardware profile's timing) over the daemon's", () => {
    const own = profileOf('vm:\n  boot: 7s\n');
    const t = new Timing({ profile: INSTANT, profileOfServer: (s) => (s === 'special' ? own : undefined) });
    expect(t.ms('vm.boot', { server: 'special' })).toBe(7000);
    expect(t.ms('vm.boot', { server: 'plain' })).toBe(0);
  });
});
