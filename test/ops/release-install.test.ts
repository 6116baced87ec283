/**
 * The release as a mockcloud zone gets it: `npm run release` (tools/release.mjs) builds the
 * tarball once for this file; it is extracted at a temporary zone path (its root/ becomes the
 * zone's /), and then, as in a zone at first boot, with fake mdata-get/mdata-put, svcs,
 * svccfg, zfs and zonename on PATH:
 *
 *   1. the installed mockcloud-setup method runs (SMF environment of its manifest);
 *   2. it enables the daemon service, which here runs the daemon's SMF start method exactly as
 *      the installed manifest declares it (exec, PATH, HOME, working directory), against a dev
 *      headnode the release's own `mockcloud headnode` serves (standing in for the DC's
 *      CNAPI, VMAPI, NAPI, IMGAPI);
 *   3. `mockcloud ensure-servers 5` runs through `bash -lc`, as the nightly hook runs it with
 *      zlogin, with nothing but the zone's login profile to find the command and the daemon;
 *   4. the daemon stops on SIGTERM, as the manifest's `:kill` stop method sends it.
 *
 * The release ships a node for the zone here (--node-dir, as Triton images carry their own
 * node in build/node): a link to the node running the tests.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { extract as tarExtract } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLines } from '../cli/helpers/run-cli.js';
import { makeFakeWorld, writeFake, type FakeWorld } from './helpers/fake-commands.js';
import { REPO_ROOT, run } from './helpers/run.js';
import { findAll } from './helpers/service-bundle-dtd.js';
import { parseXml } from './helpers/xml.js';

const INSTALL = 'opt/triton/mockcloud';
const DAEMON_FMRI = 'svc:/triton/application/mockcloud:default';
const ZONE_UUID = 'b1a3f0d2-4c5e-4f60-8a7b-9c0d1e2f3a4b';
const ADMIN_UUID = '930896af-bf8c-48d4-885c-6573a94b1853';

let tmp: string;
let tarball: string;
let zoneRoot: string;
let install: string;
let world: FakeWorld;
let headnode: ChildProcess | undefined;
let headnodeUrls: { cnapi: string; vmapi: string; napi: string; imgapi: string };
let daemonPid: number | undefined;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 60_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A path of the zone (/opt/..., /root) as it lies under the temporary zone root. */
const inZone = (p: string) => path.join(zoneRoot, p);

/** The environment and command SMF would give a manifest's start method, under the zone root. */
function smfStart(manifestFile: string): { exec: string; args: string[]; cwd: string; env: Record<string, string> } {
  const doc = parseXml(readFileSync(manifestFile, 'utf8'));
  const start = findAll(doc.root, 'exec_method').find((m) => m.attrs.name === 'start')!;
  const context = findAll(doc.root, 'method_context')[0]!;
  const env: Record<string, string> = {};
  for (const v of findAll(context, 'envvar')) env[v.attrs.name!] = v.attrs.value!;
  // Absolute paths of the zone move under the zone root; the system's stay (/usr/bin ...).
  env.PATH = env.PATH!.split(':')
    .map((p) => (p.startsWith('/opt/') ? inZone(p) : p))
    .join(':');
  env.HOME = inZone(env.HOME!);
  const [exec, ...args] = start.attrs.exec!.split(' ');
  return { exec: inZone(exec!), args, cwd: inZone(context.attrs.working_directory ?? '/'), env };
}

beforeAll(async () => {
  if (!existsSync(path.join(REPO_ROOT, 'dist/src/cli/main.js'))) throw new Error('dist/ is missing: build first (npm test builds; or npm run build)');
  tmp = await mkdtemp(path.join(os.tmpdir(), 'mockcloud-release-'));
  // A node for the zone, as `--node-dir` ships one (build/node/bin/node).
  await mkdir(path.join(tmp, 'node/bin'), { recursive: true });
  await symlink(process.execPath, path.join(tmp, 'node/bin/node'));
  const built = await run(process.execPath, [path.join(REPO_ROOT, 'tools/release.mjs'), '--no-build', '--out', path.join(tmp, 'out'), '--node-dir', path.join(tmp, 'node')], {
    timeoutMs: 240_000,
  });
  expect(built.code, built.stderr).toBe(0);
  tarball = built.stdout.trim();

  // The zone path: the tarball's root/ is the zone's /.
  const zonePath = path.join(tmp, 'zones', ZONE_UUID);
  await mkdir(zonePath, { recursive: true });
  await tarExtract({ file: tarball, cwd: zonePath });
  zoneRoot = path.join(zonePath, 'root');
  install = inZone(INSTALL);
}, 300_000);

afterAll(async () => {
  if (daemonPid !== undefined && alive(daemonPid)) process.kill(daemonPid, 'SIGKILL');
  if (headnode && headnode.exitCode === null) headnode.kill('SIGKILL');
  await world?.cleanup();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('the release tarball', () => {
  it('is <image>-pkg-<stamp>.tar.gz with root/opt/triton/mockcloud and a release.json naming it', () => {
    expect(path.basename(tarball)).toMatch(/^mockcloud-ts-pkg-.+-\d{8}T\d{6}Z-g[0-9a-f]{7}\.tar\.gz$/);
    const release = JSON.parse(readFileSync(path.join(install, 'release.json'), 'utf8')) as Record<string, any>;
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    expect(release).toMatchObject({ name: pkg.name, image: 'mockcloud-ts', version: pkg.version, installDir: '/opt/triton/mockcloud' });
    expect(Date.now() - Date.parse(release.buildTime)).toBeLessThan(600_000);
    expect(release.node.bundled).toBe(true);
    const head = spawnSyncText('git', ['rev-parse', 'HEAD']);
    if (head) expect(release.git.sha).toBe(head);
    expect(path.basename(tarball)).toContain(release.stamp);
  });

  it('holds the compiled code, production dependencies only, the command, SMF files, tools and docs', async () => {
    // The fleet page (src/ui/page, copied by the build) and the charting library it loads from node_modules.
    for (const f of ['dist/src/cli/main.js', 'dist/src/ui/page/index.html', 'dist/src/ui/page/app.js', 'node_modules/uplot/dist/uPlot.esm.js', 'smf/manifests/mockcloud.xml', 'smf/manifests/mockcloud-setup.xml', 'docs/operator-guide.md', 'package.json']) {
      expect(existsSync(path.join(install, f)), f).toBe(true);
    }
    for (const f of ['bin/mockcloud', 'bin/mockcloud-node', 'smf/method/mockcloud', 'smf/method/mockcloud-setup', 'tools/mockcloud-deploy', 'tools/nightly-setup-hook']) {
      expect(statSync(path.join(install, f)).mode & 0o111, `${f} is executable`).not.toBe(0);
    }
    const modules = await readdir(path.join(install, 'node_modules'));
    // sdc-clients: `mockcloud mirror capture` reads a DC with it.
    for (const dep of ['restify', 'bunyan', 'triton-netconfig', 'vmadm', 'yargs', 'ws', 'tar', 'sdc-clients']) expect(modules).toContain(dep);
    // Tests' and build's packages stay out.
    for (const dev of ['vitest', 'typescript', 'playwright-core', '@types']) expect(modules).not.toContain(dev);
    expect(existsSync(path.join(install, 'src'))).toBe(false);
    expect(existsSync(path.join(install, 'test'))).toBe(false);
  });

  it("bin/mockcloud-node skips a node older than 20 and says what it found when there is none", async () => {
    const dir = path.join(tmp, 'old-node');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'node'), '#!/bin/bash\n[[ $1 == --version ]] && { echo v6.17.1; exit 0; }\nexit 1\n', { mode: 0o755 });
    // A newer node after the old one: the old one is passed over.
    const ok = await run(path.join(install, 'bin/mockcloud'), ['--version'], { env: { PATH: '/usr/bin:/bin', MOCKCLOUD_NODE: path.join(dir, 'node') } });
    expect(ok.code, ok.stderr).toBe(0);
    // The repo's copy has no build/node: with only the old node around, a clear error.
    const none = await run(path.join(REPO_ROOT, 'tools/release/bin/mockcloud'), ['--version'], { env: { PATH: `${dir}:/nonexistent`, MOCKCLOUD_NODE: path.join(dir, 'node') } });
    if (!existsSync('/opt/local/bin/node') && !existsSync('/usr/node/bin/node')) {
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/no node >= 20 found \(too old: .*node \(v6\.17\.1\)/);
    }
  });
});

describe('a zone installed from the release', () => {
  it('sets up from mdata, starts the daemon through its SMF start method, and takes `bash -lc "mockcloud ensure-servers 5"`', async () => {
    // The DC's APIs: the release's own dev headnode, on loopback.
    const hnDir = path.join(tmp, 'headnode');
    headnode = spawn(path.join(install, 'bin/mockcloud'), ['headnode', '--data-dir', hnDir], {
      env: { PATH: '/usr/bin:/bin', HOME: tmp, MOCKCLOUD_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let hnErr = '';
    headnode.stderr!.on('data', (d: Buffer) => (hnErr += d.toString()));
    headnode.stdout!.resume();
    const hnJson = path.join(hnDir, 'headnode.json');
    await until('the dev headnode', () => existsSync(hnJson) || headnode!.exitCode !== null);
    expect(headnode.exitCode, hnErr).toBeNull();
    headnodeUrls = JSON.parse(await readFile(hnJson, 'utf8')) as typeof headnodeUrls;

    // The zone's mdata and SMF. svcadm enable of the daemon runs its start method as the
    // installed manifest declares it, with the data dir svccfg setenv gave the service.
    world = await makeFakeWorld(['mdata-get', 'mdata-put', 'svcs', 'zfs', 'zonename']);
    const mdata: Record<string, string> = {
      'sdc:datacenter_name': 'us-test-1',
      dnsDomain: 'example.invalid',
      // The zone's admin NIC: loopback, so the mock CNs can bind it.
      'sdc:nics': JSON.stringify([{ interface: 'net0', nic_tag: 'admin', ip: '127.0.0.1', mac: '90:b8:d0:00:00:01', primary: true }]),
      'sdc:alias': 'mockcloud0',
      ufdsAdmin: ADMIN_UUID,
    };
    for (const [k, v] of Object.entries(mdata)) await world.setMdata(k, v);
    await writeFake(
      world.bin,
      'svccfg',
      `record "$@"
if [[ $1 == import ]]; then
    name=$(sed -n 's/.*<service name="\\([^"]*\\)".*/\\1/p' "$2" | head -n 1)
    state=disabled
    grep -q '<create_default_instance enabled="true"' "$2" && state=online
    echo "$state" >"$(svc_file "svc:/$name:default")"
elif [[ $1 == -s && $3 == setenv ]]; then
    printf '%s' "$5" >"$FAKE_STATE/setenv-$4"
fi
exit 0`,
    );
    const smf = smfStart(path.join(install, 'smf/manifests/mockcloud.xml'));
    expect(smf.args).toEqual(['start']);
    const daemonEnv: Record<string, string> = {
      ...smf.env,
      // mdata-get is the zone's (faked); nothing else of the test's environment.
      PATH: `${smf.env.PATH}:${world.bin}:/bin`,
      FAKE_STATE: world.state,
      MOCKCLOUD_INSTALL_DIR: install,
      // The DC's APIs (config.json names http://cnapi.us-test-1.example.invalid ...).
      MOCKCLOUD_CNAPI_URL: headnodeUrls.cnapi,
      MOCKCLOUD_VMAPI_URL: headnodeUrls.vmapi,
      MOCKCLOUD_NAPI_URL: headnodeUrls.napi,
      MOCKCLOUD_IMGAPI_URL: headnodeUrls.imgapi,
      // 9163 may be anyone's on a test machine; with a real Triton the daemon refuses to move it.
      MOCKCLOUD_CMON_PORT: '0',
      MOCKCLOUD_START_WAIT_SECONDS: '120',
    };
    const envArgs = Object.entries(daemonEnv).map(([k, v]) => `${k}=${v}`);
    await writeFake(
      world.bin,
      'svcadm',
      `record "$@"
verb=$1; shift; fmri=\${@: -1}; f=$(svc_file "$fmri")
[[ -f $f ]] || { echo "svcadm: Pattern '$fmri' doesn't match any instances" >&2; exit 1; }
case $verb in
enable)
    if [[ $fmri == ${DAEMON_FMRI} && $(cat "$f") != online ]]; then
        if (cd ${JSON.stringify(smf.cwd)} && exec env -i ${envArgs.map((a) => JSON.stringify(a)).join(' ')} MOCKCLOUD_DATA_DIR="$(cat "$FAKE_STATE/setenv-MOCKCLOUD_DATA_DIR")" ${[smf.exec, ...smf.args].map((a) => JSON.stringify(a)).join(' ')}) >>"$FAKE_STATE/daemon.log" 2>&1; then
            echo online >"$f"
        else
            echo maintenance >"$f"
        fi
    else
        echo online >"$f"
    fi ;;
disable) echo disabled >"$f" ;;
clear) echo online >"$f" ;;
esac
exit 0`,
    );

    // 1-2. The setup method, as SMF runs it from the installed manifest.
    const setupSmf = smfStart(path.join(install, 'smf/manifests/mockcloud-setup.xml'));
    const setup = await run(setupSmf.exec, setupSmf.args, {
      env: {
        ...setupSmf.env,
        PATH: `${world.bin}:${setupSmf.env.PATH}:/bin`,
        FAKE_STATE: world.state,
        FAKE_ZONENAME: ZONE_UUID,
        MOCKCLOUD_SETUP_ROOT: zoneRoot,
        MOCKCLOUD_INSTALL_DIR: install,
        MOCKCLOUD_SETUP_WAIT_SECONDS: '120',
        MOCKCLOUD_SETUP_POLL_SECONDS: '0.2',
      },
      timeoutMs: 180_000,
    });
    const daemonLog = () => readFile(path.join(world.state, 'daemon.log'), 'utf8').catch(() => '');
    expect(setup.code, `${setup.stderr}\n--- daemon:\n${await daemonLog()}`).toBe(0);
    expect(setup.stderr).toMatch(/mockcloudNumServers is unset/);
    expect(await world.svcState(DAEMON_FMRI)).toBe('online');
    const dataDir = inZone('data/mockcloud');
    const daemonJson = JSON.parse(await readFile(path.join(dataDir, 'daemon.json'), 'utf8')) as { pid: number; state: string };
    daemonPid = daemonJson.pid;
    expect(daemonJson.state).toBe('running');
    expect(alive(daemonJson.pid)).toBe(true);
    expect(await daemonLog()).toMatch(/daemon running \(pid \d+\)/);

    // 3. As the nightly hook: `zlogin <zone> /bin/bash -lc 'mockcloud ensure-servers 5'`. zlogin
    // gives the command su's PATH and root's HOME; the login shell reads the zone's profile.
    const login = (command: string) =>
      run('/bin/bash', ['-lc', command], { env: { PATH: '/usr/sbin:/usr/bin', HOME: inZone('root') }, timeoutMs: 120_000 });
    const ensure = await login('mockcloud ensure-servers 5');
    expect(ensure.code, `${ensure.stdout}\n${ensure.stderr}\n--- daemon:\n${await daemonLog()}`).toBe(0);
    const listed = await login('mockcloud list-servers --json');
    expect(listed.code, listed.stderr).toBe(0);
    // One JSON object per line, as node-triton's list commands print them.
    const servers = jsonLines<{ uuid: string; headnode: boolean; agentAddress: string | null }>(listed.stdout);
    expect(servers.filter((s) => !s.headnode)).toHaveLength(5);
    expect(servers.every((s) => s.agentAddress !== null)).toBe(true);
    // The DC's CNAPI knows them.
    const cnapi = (await (await fetch(`${headnodeUrls.cnapi}/servers?extras=sysinfo`)).json()) as { uuid: string }[];
    for (const s of servers) expect(cnapi.map((c) => c.uuid)).toContain(s.uuid);

    // `zlogin <zone> mockcloud status` (no login shell): su's SUPATH, from the zone's defaults.
    const supath = /^SUPATH=(.*)$/m.exec(await readFile(inZone('etc/default/su'), 'utf8'))?.[1];
    expect(supath?.split(':')).toContain(path.join(install, 'bin'));
    const status = await run('/bin/sh', ['-c', 'mockcloud status --json'], { env: { PATH: supath!, HOME: inZone('root') } });
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as { pid: number }).pid).toBe(daemonJson.pid);

    // 4. `:kill`: SIGTERM to the contract; the daemon stops its CNs and exits.
    process.kill(daemonJson.pid, 'SIGTERM');
    await until('the daemon to exit', () => !alive(daemonJson.pid), 30_000);
    expect(existsSync(path.join(dataDir, 'daemon.json'))).toBe(false);
    headnode.kill('SIGTERM');
  });
});

function spawnSyncText(cmd: string, args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}
