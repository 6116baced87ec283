/**
 * `mockcloud daemon --main-thread-nice N` on Linux runs every thread but its heartbeat thread (the main thread's
 * tasks, APIs and agents, V8's and libuv's helpers) below the heartbeat thread, so that a host short of CPU delays tasks before heartbeats (src/daemon/thread-priority.ts).
 * Read from what the kernel says of each of the daemon's threads.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { promises as fsp, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBuiltDaemon, type BuiltDaemon } from './helpers/built-daemon.js';

/** The nice value of each of a process's threads, by thread id. */
function threadNices(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    // The fields after the command (which may hold spaces) start with the state, the third field.
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), Number(fields[16]));
  }
  return out;
}

describe.skipIf(process.platform !== 'linux')("the daemon's thread priorities", () => {
  let daemon: BuiltDaemon | undefined;
  afterEach(async () => {
    await daemon?.stop();
    daemon = undefined;
  });

  it.each([
    { args: ['--main-thread-nice', '10'], levels: 10, said: 'with --main-thread-nice 10, 10 levels below' },
    { args: ['--main-thread-nice', '3'], levels: 3, said: 'with --main-thread-nice 3, 3 levels below' },
    { args: [], levels: 0, said: 'by default, at the same priority as' },
  ])('runs its main thread and every other but one $said the heartbeat thread', async ({ args, levels }) => {
    // The daemon's threads start with the priority of the thread that spawned it.
    const base = os.getPriority(0);
    daemon = await startBuiltDaemon({ args });
    const { pid } = JSON.parse(await fsp.readFile(path.join(daemon.dataDir, 'daemon.json'), 'utf8')) as { pid: number };
    const lowered = Math.min(19, base + levels);
    const nices = threadNices(pid);
    expect(nices.get(pid)).toBe(lowered);
    const others = [...nices.entries()].filter(([tid]) => tid !== pid).map(([, nice]) => nice);
    // V8's and libuv's helpers and the heartbeat thread.
    expect(others.length).toBeGreaterThanOrEqual(2);
    if (levels === 0) expect(new Set(others)).toEqual(new Set([base]));
    else {
      // The heartbeat thread alone keeps the priority the daemon started with.
      expect(others.filter((n) => n === base)).toHaveLength(1);
      expect(others.filter((n) => n !== base).every((n) => n === lowered)).toBe(true);
    }
  });
});
