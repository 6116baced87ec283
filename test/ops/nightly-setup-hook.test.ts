/**
 * tools/nightly-setup-hook against a small fake CNAPI (on 127.0.0.1) and a fake `mockcloud` on
 * PATH. The fake `mockcloud ensure-servers N` records N; the fake CNAPI then lists N mock CNs
 * ("System Type": "Virtual") that turn "running" only after a few listings, as real CNs do once
 * their heartbeats arrive. What CI relies on: exit 0 only when every mock CN runs, a one-line
 * summary, a non-zero exit with the reason on timeout or failure, and a second run is harmless.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFakeWorld, writeFake, type FakeWorld } from './helpers/fake-commands.js';
import { REPO_ROOT, run } from './helpers/run.js';

const HOOK = path.join(REPO_ROOT, 'tools/nightly-setup-hook');
const ZONE = '7d0c3c52-8a1e-4b52-9f53-3a5d1c2b0e41';

interface FakeCnapi {
  url: string;
  /** GET /servers requests seen, with their query strings. */
  listings: URLSearchParams[];
  /** Mock CN uuids currently registered, in creation order. */
  mockUuids(): string[];
  close(): Promise<void>;
}

/**
 * CNAPI's GET /servers for a DC with a headnode, a real CN that is down (not a mock: the hook
 * must not wait for it), and as many mock CNs as the last `ensure-servers` asked for (read from
 * the fake mockcloud's state). A mock CN is "unknown" for its first `runningAfter` listings,
 * then "running"; indexes in `stuck` never run.
 */
async function startFakeCnapi(stateDir: string, runningAfter: number, stuck: number[] = [], others: Others = {}): Promise<FakeCnapi> {
  const listings: URLSearchParams[] = [];
  const mocks: { uuid: string; seen: number }[] = [];
  let next = 0;
  const base = [
    { uuid: '44454c4c-4800-1034-804a-b2c04f354d32', hostname: 'headnode', status: 'running', headnode: true, sysinfo: { 'System Type': 'SunOS' } },
    { uuid: '44454c4c-4800-1034-804a-b2c04f354d33', hostname: 'cn1', status: 'unknown', headnode: false, sysinfo: { 'System Type': 'SunOS' } },
  ];
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.method !== 'GET' || url.pathname !== '/servers') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ code: 'ResourceNotFound', message: 'route not found' }));
        return;
      }
      listings.push(url.searchParams);
      const want = Number((await readFile(path.join(stateDir, 'want'), 'utf8').catch(() => '0')).trim());
      while (mocks.length < want) {
        mocks.push({ uuid: `564d0000-0000-4000-8000-${String(next++).padStart(12, '0')}`, seen: 0 });
      }
      mocks.splice(want);
      const foreign = Array.from({ length: others.count ?? 0 }, (_, i) => ({
        uuid: `7a7a0000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        hostname: `VC7A7A000${i}`,
        status: 'unknown',
        headnode: false,
        sysinfo: { 'System Type': 'Virtual', 'Mockcloud Daemon': 'e0e0e0e0-0000-4000-8000-000000000002@elsewhere' },
      }));
      const all = [
        ...base,
        ...foreign,
        ...mocks.map((m, i) => {
          m.seen++;
          const running = m.seen > runningAfter && !stuck.includes(i);
          return {
            uuid: m.uuid,
            hostname: `VC${m.uuid.slice(0, 8).toUpperCase()}`,
            status: running ? 'running' : 'unknown',
            headnode: false,
            sysinfo: { 'System Type': 'Virtual', UUID: m.uuid, ...(others.daemon ? { 'Mockcloud Daemon': others.daemon } : {}) },
          };
        }),
      ];
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 1000);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(all.slice(offset, offset + limit)));
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    listings,
    mockUuids: () => mocks.map((m) => m.uuid),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Other daemons' mock CNs in the same CNAPI (never running), and the daemon this one says it is. */
interface Others {
  count?: number;
  daemon?: string;
}

/** `ensure-servers N -j` answers JSON naming its daemon when FAKE_DAEMON is set (as mockcloud does); plain text otherwise (an older one). */
const FAKE_MOCKCLOUD = `record "$@"
[[ \${FAKE_MOCKCLOUD_RC:-0} == 0 ]] || { echo "mockcloud: the daemon is not running" >&2; exit \${FAKE_MOCKCLOUD_RC}; }
echo "$2" >"$FAKE_STATE/want"
printf '%s\\n' "\${MOCKCLOUD_NAPI_URL:-}" >"$FAKE_STATE/napi-url"
echo "creating some" >&2
if [[ -n \${FAKE_DAEMON:-} ]]; then echo "{\\"daemon\\": \\"$FAKE_DAEMON\\", \\"want\\": $2}"; else echo "Already have $2 mock servers"; fi`;

const DAEMON = 'd0d0d0d0-0000-4000-8000-000000000001@zone1';

let world: FakeWorld;
let cnapi: FakeCnapi | undefined;

beforeEach(async () => {
  world = await makeFakeWorld([]);
  await writeFake(world.bin, 'mockcloud', FAKE_MOCKCLOUD);
});

afterEach(async () => {
  await cnapi?.close();
  cnapi = undefined;
  await world.cleanup();
});

const hook = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  run(HOOK, args, { env: { ...world.env, ...env }, timeoutMs: 30_000 });

describe('nightly-setup-hook', () => {
  it('ensures N mock CNs and exits 0 only once CNAPI shows every one running', async () => {
    cnapi = await startFakeCnapi(world.state, 2);
    const dataDir = path.join(world.dir, 'data');
    const r = await hook([
      '3', '--cnapi-url', cnapi.url, '--napi-url', 'http://napi.test', '--data-dir', dataDir, '--interval', '0.1',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(await world.callsOf('mockcloud')).toEqual([['mockcloud', 'ensure-servers', '3', '-j', '--data-dir', dataDir]]);
    expect((await readFile(path.join(world.state, 'napi-url'), 'utf8')).trim()).toBe('http://napi.test');
    // It kept polling while the CNs were not yet running (the down real CN does not count).
    expect(cnapi.listings.length).toBeGreaterThanOrEqual(3);
    expect(cnapi.listings.every((q) => q.get('extras')?.split(',').includes('sysinfo'))).toBe(true);
    expect(r.stderr).toMatch(/waiting: .*not running/);
    // One summary line on stdout.
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toMatch(/OK: 3 mock CNs running in CNAPI \(wanted 3\)/);
  });

  it("counts and waits for its own daemon's CNs only: other daemons' CNs in the same CNAPI are not its business", async () => {
    cnapi = await startFakeCnapi(world.state, 1, [], { count: 2, daemon: DAEMON });
    const r = await hook(['3', '--cnapi-url', cnapi.url, '--interval', '0.1', '--timeout', '20'], { FAKE_DAEMON: DAEMON });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/OK: 3 mock CNs running in CNAPI \(wanted 3\)/);
    expect(r.stderr).toContain(`of daemon ${DAEMON}`);
    // ensure-servers' progress still reaches the log.
    expect(r.stderr).toContain('creating some');
  });

  it('counts every mock CN when mockcloud names no daemon (an older one): others never running hold it up', async () => {
    cnapi = await startFakeCnapi(world.state, 0, [], { count: 1, daemon: DAEMON });
    const r = await hook(['2', '--cnapi-url', cnapi.url, '--interval', '0.1', '--timeout', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/1 of 3 mock CNs not running/);
  });

  it('is safe to run twice: the same N again, no more CNs, exit 0', async () => {
    cnapi = await startFakeCnapi(world.state, 1);
    const args = ['4', '--cnapi-url', cnapi.url, '--interval', '0.1'];
    expect((await hook(args)).code).toBe(0);
    const first = cnapi.mockUuids();
    const r = await hook(args);
    expect(r.code, r.stderr).toBe(0);
    expect(cnapi.mockUuids()).toEqual(first);
    expect(await world.callsOf('mockcloud')).toEqual([
      ['mockcloud', 'ensure-servers', '4', '-j'],
      ['mockcloud', 'ensure-servers', '4', '-j'],
    ]);
  });

  it('times out with the reason (which CNs are not running) and a non-zero exit', async () => {
    cnapi = await startFakeCnapi(world.state, 0, [1]);
    const r = await hook(['3', '--cnapi-url', cnapi.url, '--interval', '0.2', '--timeout', '1']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const stuckUuid = cnapi.mockUuids()[1]!;
    expect(r.stderr).toMatch(/FAILED: timed out after 1s: 1 of 3 mock CNs not running/);
    expect(r.stderr).toContain(`${stuckUuid} (unknown)`);
  });

  it('fails at once, with the reason, when ensure-servers fails', async () => {
    cnapi = await startFakeCnapi(world.state, 0);
    const r = await hook(['3', '--cnapi-url', cnapi.url, '--interval', '0.1'], { FAKE_MOCKCLOUD_RC: '4' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/FAILED: mockcloud ensure-servers 3: .*exit status 4/);
    // Its own message reaches the CI log too.
    expect(r.stderr).toContain('mockcloud: the daemon is not running');
    expect(cnapi.listings).toHaveLength(0);
  });

  it('times out naming CNAPI when it cannot be reached', async () => {
    const closed = await startFakeCnapi(world.state, 0);
    const url = closed.url;
    await closed.close();
    const r = await hook(['2', '--cnapi-url', url, '--interval', '0.2', '--timeout', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/FAILED: timed out after 1s: cannot list servers in CNAPI/);
  });

  it('works through a headnode: sdc-cnapi there, ensure-servers in the mockcloud zone', async () => {
    cnapi = await startFakeCnapi(world.state, 1);
    // ssh HOST CMD: runs CMD with the fakes; zlogin runs the zone command here.
    await writeFake(world.bin, 'ssh', `while [[ $1 == -o ]]; do shift 2; done
record "$@"; shift; exec bash -c "$*"`);
    await writeFake(world.bin, 'vmadm', `record "$@"\n[[ $3 == alias=mockcloud0 ]] && echo ${ZONE}`);
    await writeFake(world.bin, 'zlogin', `record "$@"
[[ $1 == ${ZONE} && $2 == /bin/bash && $3 == -lc ]] || exit 1
exec bash -c "$4"`);
    await writeFake(world.bin, 'sdc-cnapi', `record "$@"
exec node -e '
require("http").get(process.env.FAKE_CNAPI_URL + process.argv[1], (res) => {
  let body = ""; res.setEncoding("utf8"); res.on("data", (d) => body += d);
  res.on("end", () => process.stdout.write("HTTP/1.1 " + res.statusCode + " OK\\r\\nContent-Type: application/json\\r\\n\\r\\n" + body + "\\n"));
});' "$1"`);

    const r = await hook(['2', '--headnode', 'hn.test', '--interval', '0.1'], { FAKE_CNAPI_URL: cnapi.url });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/OK: 2 mock CNs running/);
    expect(await world.callsOf('zlogin')).toEqual([['zlogin', ZONE, '/bin/bash', '-lc', 'mockcloud ensure-servers 2 -j']]);
    expect(await world.callsOf('mockcloud')).toEqual([['mockcloud', 'ensure-servers', '2', '-j']]);
    expect((await world.callsOf('ssh')).every((c) => c[1] === 'hn.test')).toBe(true);
    expect(cnapi.listings.length).toBeGreaterThanOrEqual(2);
  });

  it.each([
    ['no COUNT', ['--cnapi-url', 'http://127.0.0.1:1'], /COUNT is required/],
    ['a COUNT that is not a number', ['ten', '--cnapi-url', 'http://127.0.0.1:1'], /not a whole number/],
    ['no way to reach CNAPI', ['3'], /say where CNAPI is/],
    ['an unknown option', ['3', '--cnapi-url', 'http://127.0.0.1:1', '--bogus'], /bogus/],
  ])('usage error (exit 2): %s', async (_label, args, message) => {
    const r = await hook(args, { MOCKCLOUD_CNAPI_URL: '', MOCKCLOUD_NUM_SERVERS: '' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(await world.callsOf('mockcloud')).toEqual([]);
  });
});
