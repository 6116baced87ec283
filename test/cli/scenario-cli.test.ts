/**
 * `mockcloud scenario validate|run|stop` as a user runs them: the built CLI as a child process.
 * validate needs no daemon; run and stop run against a real built daemon with its embedded
 * dev headnode, which does the create and delete steps; waits and marks are timed by the run.
 *
 * The daemon's own /events routes serve the event and mark steps, and its event log
 * (<data-dir>/events.jsonl) says what was applied.
 */
import { spawn } from 'node:child_process';
import { existsSync, promises as fsp, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/common/duration.js';
import { MAIN, startBuiltDaemon, until, type BuiltDaemon } from './helpers/built-daemon.js';
import { eventsAccess, readEventLog, type EventsAccess } from './helpers/events-log.js';
import { CLI_ENV, runCli, runCommand, shq } from './helpers/run-cli.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = path.join(ROOT, 'docs/examples');

let tmp: string;
/** A data dir no daemon runs in: validate checks what it can without one. */
let noDaemonDir: string;

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-scenario-'));
  noDaemonDir = path.join(tmp, 'no-daemon');
  await fsp.mkdir(noDaemonDir);
});

afterAll(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

async function scenarioFile(name: string, text: string): Promise<string> {
  const file = path.join(tmp, name);
  await fsp.writeFile(file, text);
  return file;
}

describe('scenario validate, without a daemon', () => {
  it('passes every example in docs/examples', async () => {
    const files = readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml'));
    expect(files.sort()).toEqual(['flapping-rack.yaml', 'full-disk.yaml', 'rolling-reboot.yaml', 'vm-crash-storm.yaml']);
    for (const f of files) {
      const r = await runCli(['scenario', 'validate', path.join(EXAMPLES, f), '--data-dir', noDaemonDir]);
      expect(r.code, `${f}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toContain(`${f}: ok: scenario ${f.replace('.yaml', '')}`);
    }
  });

  it('names the line and column of each problem and exits 2: unknown step, bad duration, unknown event type, YAML syntax', async () => {
    const bad = await scenarioFile(
      'bad.yaml',
      ['steps:', '  - mark: begin', '  - reboot: 3', '  - wait: 30', '  - event: { type: explode, target: { all: true } }', ''].join('\n'),
    );
    const r = await runCli(['scenario', 'validate', bad, '--data-dir', noDaemonDir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${bad}:3:5: unknown key "reboot" in a step`);
    expect(r.stderr).toContain(`${bad}:4:11: wait: duration "30" has no unit`);
    expect(r.stderr).toContain(`${bad}:5:20: unknown event type "explode"`);
    expect(r.stderr).toContain('3 problem(s); nothing was changed');

    const syntax = await scenarioFile('syntax.yaml', 'steps:\n  - mark: a\n  - wait: [1s\n');
    const s = await runCli(['scenario', 'validate', syntax, '--data-dir', noDaemonDir]);
    expect(s.code).toBe(2);
    expect(s.stderr).toMatch(new RegExp(`${syntax.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4:1: YAML syntax error: `));

    const json = await runCli(['scenario', 'validate', bad, '-j', '--data-dir', noDaemonDir]);
    expect(json.code).toBe(2);
    const out = JSON.parse(json.stdout) as { ok: boolean; problems: { line: number; col: number; message: string }[] };
    expect(out.ok).toBe(false);
    expect(out.problems.map((p) => p.line)).toEqual([3, 4, 5]);
  });

  it('says what is wrong with the command line (exit 2)', async () => {
    const r = await runCli(['scenario', 'run', '--data-dir', noDaemonDir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('name the scenario file');
    const missing = await runCli(['scenario', 'validate', path.join(tmp, 'nope.yaml'), '--data-dir', noDaemonDir]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot read the scenario file');
  });

  it('refuses a file over 1 MiB by name and size, before parsing it (exit 2, one line)', async () => {
    // A valid scenario padded with a comment past the bound: only its size is wrong.
    const big = await scenarioFile('big.yaml', `steps:\n  - mark: a\n# ${'x'.repeat(1024 * 1024)}\n`);
    const r = await runCli(['scenario', 'validate', big, '--data-dir', noDaemonDir]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(`mockcloud: ${big} is over 1 MiB: too large for a scenario file`);
  });
});

describe('scenario run and stop against a running daemon', () => {
  let daemon: BuiltDaemon;
  let events: EventsAccess;
  let cns: string[];

  beforeAll(async () => {
    daemon = await startBuiltDaemon({ servers: 2 });
    events = await eventsAccess(daemon.dataDir);
    cns = (await servers()).filter((s) => !s.headnode).map((s) => s.uuid);
  }, 120_000);

  afterAll(async () => {
    await events?.close();
    await daemon?.stop();
  });

  async function servers(): Promise<{ uuid: string; headnode: boolean }[]> {
    const json = JSON.parse(await fsp.readFile(path.join(daemon.dataDir, 'daemon.json'), 'utf8')) as { control: { url: string } };
    const res = await fetch(`${json.control.url}/servers`);
    return (await res.json()) as { uuid: string; headnode: boolean }[];
  }

  async function activeEvents(): Promise<{ id: string; type: string }[]> {
    const res = await fetch(`${events.controlUrl}/events`);
    return ((await res.json()) as { active: { id: string; type: string }[] }).active;
  }

  it('refuses a file whose target matches nothing, naming the line, and changes nothing (even the create step before it)', async () => {
    const before = (await servers()).map((s) => s.uuid).sort();
    const logBefore = await readEventLog(events.eventLog);
    const file = await scenarioFile(
      'no-match.yaml',
      [
        'steps:',
        '  - create: 1',
        '  - event:',
        '      type: offline',
        '      target: { servers: [00000000-0000-4000-8000-00000000dead] }',
        '  - event: { type: reboot, target: { profile: no-such-profile } }',
        '',
      ].join('\n'),
    );
    for (const action of ['validate', 'run']) {
      const r = await runCli(['scenario', action, file, '--data-dir', events.cliDataDir]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`${file}:5:15: server 00000000-0000-4000-8000-00000000dead is not one of the daemon's mock CNs`);
      expect(r.stderr).toContain(`${file}:6:36: target profile "no-such-profile" matches nothing: the daemon has no such profile`);
    }
    expect((await servers()).map((s) => s.uuid).sort()).toEqual(before);
    expect(await readEventLog(events.eventLog)).toEqual(logBefore);
    expect(existsSync(path.join(events.cliDataDir, 'scenario.pid'))).toBe(false);

    // The same targets, matching: validate says they were checked against the fleet.
    const good = await scenarioFile('match.yaml', `- event: { type: offline, target: { servers: [${cns[0]}] }, duration: 1s }\n- event: { type: reboot, target: { profile: virtual } }\n`);
    const ok = await runCli(['scenario', 'validate', good, '--data-dir', events.cliDataDir]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`its targets match the daemon's fleet (${cns.length} CNs now)`);
  });

  it('passes every example in docs/examples against a running fleet too', async () => {
    for (const f of readdirSync(EXAMPLES).filter((x) => x.endsWith('.yaml'))) {
      const r = await runCli(['scenario', 'validate', path.join(EXAMPLES, f), '--data-dir', events.cliDataDir]);
      expect(r.code, `${f}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toContain("its targets match the daemon's fleet");
    }
  });

  it('runs create, wait, delete and mark steps in order, and its progress ends', async () => {
    const before = (await servers()).length;
    const file = await scenarioFile(
      'small.yaml',
      ['name: small', 'steps:', '  - mark: begin', '  - create: 2', '  - wait: 1500ms', '  - mark: created', '  - delete: 1', '  - mark: end', ''].join('\n'),
    );
    const started = Date.now();
    const r = await runCli(['scenario', 'run', file, '--seed', '42', '--data-dir', events.cliDataDir], { timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    // Not a TTY: one plain line per step, in order, then the end.
    const lines = r.stderr.split('\n').filter((l) => /^\[\+/.test(l));
    expect(lines.map((l) => l.replace(/^\[\+[^\]]+\] /, ''))).toEqual([
      'step 1 (line 3): mark "begin"',
      'step 2 (line 4): created 2 server(s)',
      'step 3 (line 5): wait 1.5s (until 1.5s)',
      'step 4 (line 6): mark "created"',
      'step 5 (line 7): deleted 1 server(s)',
      'step 6 (line 8): mark "end"',
    ]);
    expect(r.stderr).toMatch(/scenario small finished: 6 step\(s\) in [\d.]+s \(seed 42\)\n$/);
    // The daemon did the work: two CNs more, one (the newest) fewer.
    expect((await servers()).length).toBe(before + 1);
    // The marks are in the event log, in order, with where they came from; the wait was waited.
    const marks = (await readEventLog(events.eventLog)).filter((l) => l.phase === 'mark' && Date.parse(l.time) >= started - 1000);
    expect(marks.map((m) => [m.label, m.source])).toEqual([
      ['begin', { scenario: 'small', step: 1, line: 3 }],
      ['created', { scenario: 'small', step: 4, line: 6 }],
      ['end', { scenario: 'small', step: 6, line: 8 }],
    ]);
    // The wait counts from the run's start (the create before it took part of it): step 4 is
    // not before 1.5 s into the run, by the run's own clock.
    const at = (line: string): number => {
      const d = parseDuration(/^\[\+([^\]]+)\]/.exec(line)![1]!);
      return 'ms' in d ? d.ms : NaN;
    };
    expect(at(lines[3]!)).toBeGreaterThanOrEqual(1500);
    expect(at(lines[3]!)).toBeGreaterThanOrEqual(at(lines[1]!));
    expect(Date.parse(marks[1]!.time)).toBeGreaterThan(Date.parse(marks[0]!.time));
    expect(existsSync(path.join(events.cliDataDir, 'scenario.pid'))).toBe(false);
  }, 120_000);

  // A terminal, through util-linux script(1) (a pty): the bar, redrawn in place, ends full.
  it.skipIf(process.platform !== 'linux' || !existsSync('/usr/bin/script'))('shows a progress bar on a terminal, and it ends', async () => {
    const file = await scenarioFile('tty.yaml', ['name: tty', 'steps:', '  - create: 1', '  - wait: 1s', '  - delete: 1', ''].join('\n'));
    const cmd = [process.execPath, MAIN, 'scenario', 'run', file, '--seed', '3', '--data-dir', events.cliDataDir].map(shq).join(' ');
    const r = await runCommand('/usr/bin/script', ['-q', '-e', '-c', cmd, '/dev/null'], { timeoutMs: 90_000 });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain('\x1b[');
    expect(r.stdout).toMatch(/tty \S+ 3\/3 steps \| [\d.]+m?s of 1s \| step 3: deleted 1 server\(s\)/);
    expect(r.stdout).toMatch(/scenario tty finished: 3 step\(s\) in [\d.]+s \(seed 3\)/);
    expect(r.stdout).not.toMatch(/^\[\+/m);
  }, 120_000);

  /** `scenario run` in the background, as a user leaves it running. */
  function startRun(file: string, seed: string): { exit: Promise<number | null>; stderr: () => string; kill: (s: NodeJS.Signals) => void } {
    const child = spawn(process.execPath, [MAIN, 'scenario', 'run', file, '--seed', seed, '--data-dir', events.cliDataDir], { env: CLI_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.resume();
    const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    void exit.then(() => clearTimeout(timer));
    return { exit, stderr: () => err, kill: (s) => child.kill(s) };
  }

  const longScenario = (label: string): string =>
    [
      `name: ${label}`,
      'steps:',
      '  - event:',
      '      type: offline',
      `      target: { servers: [${cns[0]}] }`,
      `  - mark: ${label}-set`,
      '  - wait: 5m',
      `  - mark: ${label}-never`,
      '',
    ].join('\n');

  async function untilMark(label: string): Promise<void> {
    await until(async () => (await readEventLog(events.eventLog)).some((l) => l.phase === 'mark' && l.label === label), 30_000, `mark ${label}`, 100);
  }

  it('scenario stop ends a run through its pid file and undoes the events it set', async () => {
    const file = await scenarioFile('stop.yaml', longScenario('stopme'));
    const run = startRun(file, '7');
    await untilMark('stopme-set');
    expect(existsSync(path.join(events.cliDataDir, 'scenario.pid'))).toBe(true);
    const started = (await readEventLog(events.eventLog)).find((l) => l.phase === 'start' && l.source?.scenario === 'stopme')!;
    // The run's seed, derived per step and repetition, goes with every event.
    expect(started).toMatchObject({ type: 'offline', seed: '7:1:0', source: { scenario: 'stopme', step: 1, line: 3 } });
    expect((await activeEvents()).map((e) => e.id)).toContain(started.id);

    const stop = await runCli(['scenario', 'stop', '--data-dir', events.cliDataDir]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(/^stopped the scenario run \(pid \d+\); ended \d+ active event\(s\)\n$/);
    expect(await run.exit).toBe(143);
    expect(run.stderr()).toMatch(/scenario stopme interrupted \(SIGTERM\); ended 1 active event\(s\)/);
    expect(await activeEvents()).toEqual([]);
    const log = await readEventLog(events.eventLog);
    expect(log.some((l) => l.phase === 'end' && l.id === started.id)).toBe(true);
    expect(log.some((l) => l.label === 'stopme-never')).toBe(false);
    expect(existsSync(path.join(events.cliDataDir, 'scenario.pid'))).toBe(false);

    // Nothing left to stop: said so, and still nothing active.
    const again = await runCli(['scenario', 'stop', '--data-dir', events.cliDataDir]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^no scenario run is going .*; ended 0 active event\(s\)\n$/);
  }, 120_000);

  it('Ctrl-C of a run undoes its events; a second run is refused while one goes on', async () => {
    const file = await scenarioFile('ctrl-c.yaml', longScenario('ctrlc'));
    const run = startRun(file, '8');
    await untilMark('ctrlc-set');
    const second = await runCli(['scenario', 'run', file, '--data-dir', events.cliDataDir]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('is already driving this daemon');
    expect((await activeEvents()).length).toBe(1);
    run.kill('SIGINT');
    expect(await run.exit).toBe(130);
    expect(run.stderr()).toMatch(/scenario ctrlc interrupted \(SIGINT\); ended 1 active event\(s\)/);
    expect(await activeEvents()).toEqual([]);
    expect(existsSync(path.join(events.cliDataDir, 'scenario.pid'))).toBe(false);
  }, 120_000);
});

/**
 * The replay promise for scenarios: the same scenario with the same seed, on two fresh
 * daemons made with the same seed and commands, produces the same event log apart from times
 * and ids. It needs the events engine's draws and seeded creation (the events and fleet-mix
 * branches): where the daemon has no --seed or no /events routes, it is skipped.
 */
describe('a seeded scenario replays', () => {
  it('two fresh daemons, the same seed: the same CNs and the same event log', async () => {
    const daemons: BuiltDaemon[] = [];
    try {
      for (let i = 0; i < 2; i++) daemons.push(await startBuiltDaemon({ servers: 4, args: ['--seed', 'replay-1'] }));
      const access = await Promise.all(daemons.map((d) => eventsAccess(d.dataDir)));
      const file = await scenarioFile(
        'replay.yaml',
        [
          'name: replay',
          'steps:',
          '  - create: { count: 2, mix: "small:1,large:1" }',
          '  - event: { type: offline, target: { percent: 50 }, duration: 1200ms }',
          '  - every: 400ms',
          '    times: 2',
          '    event: { type: slow-heartbeat, target: { count: 2 }, duration: 300ms, params: { late: 1s } }',
          '  - mark: done',
          '',
        ].join('\n'),
      );
      const logs: unknown[] = [];
      const fleets: string[][] = [];
      for (const a of access) {
        const r = await runCli(['scenario', 'run', file, '--seed', '9', '--data-dir', a.cliDataDir], { timeoutMs: 90_000 });
        expect(r.code, r.stderr).toBe(0);
        logs.push(
          (await readEventLog(a.eventLog)).map(({ time: _t, id: _i, ...rest }) => ({ ...rest, ...(Array.isArray(rest.servers) ? { servers: [...rest.servers].sort() } : {}) })),
        );
        const res = await fetch(`${a.controlUrl}/servers`);
        fleets.push(((await res.json()) as { uuid: string }[]).map((s) => s.uuid).sort());
      }
      expect(fleets[1]).toEqual(fleets[0]);
      // Every start and end (the run lasts until its events have ended) and the mark.
      expect((logs[0] as { phase: string }[]).map((l) => l.phase).sort()).toEqual(['end', 'end', 'end', 'mark', 'start', 'start', 'start']);
      // The same lines; an end's place among the lines follows the daemon's scheduler tick, not the draw.
      const canonical = (log: unknown): string[] => (log as unknown[]).map((l) => JSON.stringify(l)).sort();
      expect(canonical(logs[1])).toEqual(canonical(logs[0]));
    } finally {
      await Promise.all(daemons.map((d) => d.stop()));
    }
  }, 240_000);
});
