/**
 * `mockcloud event`, `mockcloud events` and `mockcloud event end` against a built daemon with
 * the embedded dev headnode (so the fleet holds the dev DC's headnode server, which no event
 * may take). Triton CLI habits: usage errors exit 2 with a pointer to the help, daemon
 * refusals exit 1 with the daemon's message, -j prints JSON.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuiltDaemon, until, type BuiltDaemon } from './helpers/built-daemon.js';
import { jsonLines, runCli } from './helpers/run-cli.js';

describe('mockcloud event / events', () => {
  let daemon: BuiltDaemon;
  let computes: string[];
  let headnode: string;
  const dd = (): string[] => ['--data-dir', daemon.dataDir];

  beforeAll(async () => {
    daemon = await startBuiltDaemon({ servers: 2, config: { timings: { heartbeatIntervalMs: 500, statusThrottleMs: 200, startSpreadMs: 200 } } });
    const list = jsonLines<{ uuid: string; headnode: boolean }>((await runCli(['list-servers', '-j', ...dd()])).stdout);
    computes = list.filter((s) => !s.headnode).map((s) => s.uuid);
    headnode = list.find((s) => s.headnode)!.uuid;
    expect(computes).toHaveLength(2);
  }, 120_000);

  afterAll(async () => {
    await daemon?.stop();
  }, 60_000);

  it('exits 2 on usage errors, with the help pointer', async () => {
    for (const args of [
      ['event', 'offline'],
      ['event', 'offline', '--all', '--count', '1'],
      ['event', 'offline', '--all', '--duration', 'soon'],
      ['event', 'flap', '--all'],
      ['event', 'end'],
      ['event', 'meteor', '--all'],
    ]) {
      const run = await runCli([...args, ...dd()]);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/see 'mockcloud help( event)?'/);
    }
  });

  it('starts an event on every compute node (never the headnode server), lists it, ends it, and logs both', async () => {
    const started = await runCli(['event', 'slow-heartbeat', '--all', '--late', '100ms', '--duration', '1h', '-j', ...dd()]);
    expect(started.code, started.stderr).toBe(0);
    const ev = JSON.parse(started.stdout) as { id: string; servers: string[]; endsAt: string };
    expect([...ev.servers].sort()).toEqual([...computes].sort());
    expect(ev.servers).not.toContain(headnode);
    expect(Date.parse(ev.endsAt)).toBeGreaterThan(Date.now() + 3_500_000);
    const listed = await runCli(['events', ...dd()]);
    expect(listed.stdout).toContain(ev.id);
    expect(listed.stdout).toContain('slow-heartbeat');
    const ended = await runCli(['event', 'end', ev.id, ...dd()]);
    expect(ended.code, ended.stderr).toBe(0);
    expect(jsonLines((await runCli(['events', '-j', ...dd()])).stdout)).toEqual([]);
    const again = await runCli(['event', 'end', ev.id, ...dd()]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/not active/);
    const log = (await fsp.readFile(path.join(daemon.dataDir, 'events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(log.filter((l) => l.id === ev.id).map((l) => [l.phase, l.type])).toEqual([
      ['start', 'slow-heartbeat'],
      ['end', 'slow-heartbeat'],
    ]);
  }, 60_000);

  it('refuses the headnode server as a target and a task cn-agent does not run (exit 1, the daemon\'s reason)', async () => {
    const hn = await runCli(['event', 'offline', '--servers', headnode, ...dd()]);
    expect(hn.code).toBe(1);
    expect(hn.stderr).toMatch(/headnode server: never a target/);
    const task = await runCli(['event', 'task-fault', '--all', '--task', 'machine_frobnicate', '--delay', '1s', ...dd()]);
    expect(task.code).toBe(1);
    expect(task.stderr).toMatch(/no task "machine_frobnicate"/);
  }, 60_000);

  it('event end --all ends every active event', async () => {
    for (const n of [1, 2]) {
      const r = await runCli(['event', 'memory-pressure', '--count', String(n), '--percent-used', '90', ...dd()]);
      expect(r.code, r.stderr).toBe(0);
    }
    const ended = await runCli(['event', 'end', '--all', ...dd()]);
    expect(ended.stdout.trim()).toBe('ended 2 event(s)');
    expect(jsonLines((await runCli(['events', '-j', ...dd()])).stdout)).toEqual([]);
  }, 60_000);

  it('power-loss: both CNs boot again by the dev booter; boot-report and status say how', async () => {
    const bad = await runCli(['event', 'power-loss', '--all', '--spread', 'soon', ...dd()]);
    expect(bad.code).toBe(2);
    const started = await runCli(['event', 'power-loss', '--all', '--spread', '300ms', '--boot', '100ms', '-j', ...dd()]);
    expect(started.code, started.stderr).toBe(0);
    const ev = JSON.parse(started.stdout) as { id: string; servers: string[] };
    expect([...ev.servers].sort()).toEqual([...computes].sort());
    const report = await until(async () => {
      const r = JSON.parse((await runCli(['boot-report', '--event', ev.id, '-j', ...dd()])).stdout);
      return r.summary.boots === 2 && r.summary.notBack === 0 ? r : undefined;
    }, 30_000, 'both CNs back');
    expect(report.summary.byPath).toEqual({ booter: 2, direct: 0 });
    expect(report.servers.map((s: { cause: string; path: string }) => `${s.cause} ${s.path}`)).toEqual(['power-loss booter', 'power-loss booter']);
    const table = await runCli(['boot-report', '--event', ev.id, '-o', 'uuid,cause,path,phase', ...dd()]);
    expect(table.code, table.stderr).toBe(0);
    for (const uuid of computes) expect(table.stdout).toMatch(new RegExp(`${uuid}\\s+power-loss\\s+booter\\s+running`));
    expect(table.stdout).toMatch(/boots: +2 \(booter 2, direct 0\), 2 running, 0 not back/);
    expect(table.stdout).toMatch(/to lease: +p50 [\d.]+s, p99 [\d.]+s/);
    const status = await runCli(['status', ...dd()]);
    expect(status.stdout).toMatch(/boot: +booter 127\.0\.0\.1:\d+; last boot: \d+ by booter, \d+ direct/);
    const badServers = await runCli(['boot-report', '--servers', 'nope', ...dd()]);
    expect(badServers.code).toBe(2);
  }, 60_000);
});
