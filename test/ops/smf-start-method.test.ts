/**
 * smf/method/mockcloud start: SMF calls the daemon "online" when this method returns, and
 * mockcloud-setup runs `mockcloud ensure-servers` right after, so the method must return only
 * once the daemon it launched is up (daemon.json names it and it is no longer "starting"),
 * leave that daemon running in the background, and fail clearly otherwise.
 */
import { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFakeWorld, writeFake, type FakeWorld } from './helpers/fake-commands.js';
import { REPO_ROOT, run } from './helpers/run.js';

const METHOD = path.join(REPO_ROOT, 'smf/method/mockcloud');

let world: FakeWorld;
let dataDir: string;
const pidsToKill: number[] = [];

beforeEach(async () => {
  world = await makeFakeWorld([]);
  dataDir = path.join(world.root, 'data', 'mockcloud');
});

afterEach(async () => {
  for (const pid of pidsToKill.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await world.cleanup();
});

function startMethod(extraEnv: NodeJS.ProcessEnv = {}) {
  return run(METHOD, ['start'], {
    env: { ...world.env, MOCKCLOUD_DATA_DIR: dataDir, MOCKCLOUD_START_WAIT_SECONDS: '3', ...extraEnv },
    until: 'exit',
    timeoutMs: 20_000,
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A fake `mockcloud daemon`: "starting" first, "running" a moment later (each written with a
 * rename, as the real daemon writes daemon.json), then it stays up.
 */
const FAKE_DAEMON = `record "$@"
dir=\${@: -1}
echo $$ >"$FAKE_STATE/daemon.pid"
printf '{"pid": %d, "state": "starting"}\\n' $$ >"$dir/.tmp" && mv "$dir/.tmp" "$dir/daemon.json"
sleep 0.5
printf '{\\n  "pid": %d,\\n  "state": "running",\\n  "control": {"url": "http://127.0.0.1:1"}\\n}\\n' $$ >"$dir/.tmp"
mv "$dir/.tmp" "$dir/daemon.json"
exec sleep 60`;

describe('smf/method/mockcloud start', () => {
  it('returns 0 once the daemon it started is running, and leaves it running', async () => {
    await writeFake(world.bin, 'mockcloud', FAKE_DAEMON);
    const r = await startMethod();
    const pid = Number((await readFile(path.join(world.state, 'daemon.pid'), 'utf8')).trim());
    pidsToKill.push(pid);
    expect(r.code, r.stderr).toBe(0);
    expect(await world.callsOf('mockcloud')).toEqual([['mockcloud', 'daemon', '--data-dir', dataDir]]);
    // Returned only after "running" was written, not at "starting".
    expect(await readFile(path.join(dataDir, 'daemon.json'), 'utf8')).toContain('"running"');
    expect(alive(pid)).toBe(true);
  });

  it('fails when the daemon exits during start', async () => {
    await writeFake(world.bin, 'mockcloud', 'record "$@"\necho "mockcloud: config file is not valid JSON" >&2\nexit 1');
    const r = await startMethod();
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/exited during start \(status 1\)/);
    expect(r.stderr).toMatch(/not valid JSON/);
  });

  it('does not take a stale daemon.json from an earlier run for a running daemon', async () => {
    // A leftover file naming a live process (this test runner), older than the start.
    await run('/bin/mkdir', ['-p', dataDir]);
    const stale = path.join(dataDir, 'daemon.json');
    await writeFile(stale, `{"pid": ${process.pid}, "state": "running"}\n`);
    const old = new Date(Date.now() - 3600_000);
    await utimes(stale, old, old);
    // A daemon that hangs before writing daemon.json.
    await writeFake(world.bin, 'mockcloud', 'record "$@"\necho $$ >"$FAKE_STATE/daemon.pid"\nexec sleep 60');

    const r = await startMethod({ MOCKCLOUD_START_WAIT_SECONDS: '1' });
    const pid = Number((await readFile(path.join(world.state, 'daemon.pid'), 'utf8')).trim());
    pidsToKill.push(pid);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/did not write .*daemon\.json within 1s/);
    // The hung daemon is stopped, not left behind in the contract.
    for (let i = 0; i < 50 && alive(pid); i++) await new Promise((res) => setTimeout(res, 100));
    expect(alive(pid)).toBe(false);
  });

  it('rejects an unknown method name with a usage message', async () => {
    const r = await run(METHOD, ['bogus'], { env: world.env });
    expect(r.code).toBe(96);
    expect(r.stderr).toMatch(/usage: .* start/);
  });
});
