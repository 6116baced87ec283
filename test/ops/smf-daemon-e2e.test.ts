/**
 * The zone's service chain with the real daemon (the built CLI, `dist/src/cli/main.js`, as the
 * image ships it): mockcloud-setup's config writer produces config.json from mdata values, the
 * SMF start method launches `mockcloud daemon` on it and returns once the control API answers,
 * and SIGTERM (what the manifest's `:kill` stop sends) shuts the daemon down cleanly.
 * Stdout and stderr go to a file, as SMF sends them to the service log.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFakeWorld, type FakeWorld } from './helpers/fake-commands.js';
import { REPO_ROOT, run } from './helpers/run.js';

const METHOD = path.join(REPO_ROOT, 'smf/method/mockcloud');
const WRITE_CONFIG = path.join(REPO_ROOT, 'smf/method/write-daemon-config.mjs');
const MAIN = path.join(REPO_ROOT, 'dist/src/cli/main.js');
const ADMIN_UUID = '930896af-bf8c-48d4-885c-6573a94b1853';

let world: FakeWorld;
let daemonPid: number | undefined;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeEach(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npm test builds; or npx tsc -p tsconfig.json)`);
  // No fakes at all: `mockcloud` is not on PATH, so the method uses the install dir's CLI.
  world = await makeFakeWorld([]);
});

afterEach(async () => {
  if (daemonPid !== undefined && alive(daemonPid)) process.kill(daemonPid, 'SIGKILL');
  daemonPid = undefined;
  await world.cleanup();
});

describe('SMF start method with the real daemon', () => {
  it('starts the daemon on the config mockcloud-setup writes; SIGTERM stops it cleanly', async () => {
    const dataDir = path.join(world.root, 'data', 'mockcloud');
    await mkdir(dataDir, { recursive: true });
    const write = await run(process.execPath, [WRITE_CONFIG], {
      env: {
        ...world.env,
        MC_CONFIG_FILE: path.join(dataDir, 'config.json'),
        MC_DC: 'us-test-1',
        MC_DNS_DOMAIN: 'example.invalid',
        // The zone's admin NIC; loopback here so the daemon can bind it.
        MC_NICS: JSON.stringify([{ interface: 'net0', nic_tag: 'admin', ip: '127.0.0.1', mac: '90:b8:d0:00:00:01' }]),
        MC_ADMIN_UUID: ADMIN_UUID,
        MC_INSTALL_DIR: REPO_ROOT,
      },
    });
    expect(write.code, write.stderr).toBe(0);
    expect(write.stdout.trim()).toBe('changed');

    const log = path.join(world.dir, 'smf.log');
    const r = await run('/bin/bash', ['-c', 'exec "$0" start >>"$1" 2>&1', METHOD, log], {
      env: {
        ...world.env,
        MOCKCLOUD_DATA_DIR: dataDir,
        MOCKCLOUD_INSTALL_DIR: REPO_ROOT,
        MOCKCLOUD_NO_MDATA: '1',
        MOCKCLOUD_LOG_LEVEL: 'warn',
        MOCKCLOUD_CMON_PORT: '0',
        MOCKCLOUD_START_WAIT_SECONDS: '30',
        // The file's API URLs name a DC that does not exist here; keep every lookup and
        // connection on loopback (a closed port) so the test touches no network.
        ...Object.fromEntries(
          ['CNAPI', 'VMAPI', 'NAPI', 'IMGAPI'].map((s) => [`MOCKCLOUD_${s}_URL`, 'http://127.0.0.1:9']),
        ),
      },
      until: 'exit',
      timeoutMs: 40_000,
    });
    const logText = () => readFile(log, 'utf8').catch(() => '');
    expect(r.code, await logText()).toBe(0);

    const daemonJson = JSON.parse(await readFile(path.join(dataDir, 'daemon.json'), 'utf8')) as {
      pid: number;
      state: string;
      control: { url: string };
    };
    daemonPid = daemonJson.pid;
    expect(daemonJson.state).toBe('running');
    expect(alive(daemonJson.pid)).toBe(true);

    // The control API answers, and the daemon took its settings from config.json (an unknown
    // key there would have stopped it).
    const ping = (await (await fetch(`${daemonJson.control.url}/ping`)).json()) as { pid: number };
    expect(ping.pid).toBe(daemonJson.pid);
    const config = (await (await fetch(`${daemonJson.control.url}/config`)).json()) as {
      adminUuid: string;
      bindIp: string;
      datacenterName: string;
      dnsDomain: string;
      sources: Record<string, string>;
    };
    expect(config).toMatchObject({
      adminUuid: ADMIN_UUID,
      bindIp: '127.0.0.1',
      datacenterName: 'us-test-1',
      dnsDomain: 'example.invalid',
    });
    for (const key of ['adminUuid', 'bindIp', 'datacenterName', 'dnsDomain']) expect(config.sources[key]).toBe('file');

    // `:kill`: SIGTERM to the contract. The daemon stops and removes daemon.json on the way out.
    process.kill(daemonJson.pid, 'SIGTERM');
    await waitUntil('the daemon to exit', () => !alive(daemonJson.pid));
    expect(existsSync(path.join(dataDir, 'daemon.json'))).toBe(false);
    expect(await logText()).toMatch(/daemon running \(pid \d+\)/);
  });
});
