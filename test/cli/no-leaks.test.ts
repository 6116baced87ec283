/**
 * Nothing leaks into NAPI (issue 14): a daemon whose NAPI resets some requests on reused
 * keep-alive connections (a proxy in front of the dev NAPI: every 7th such request, before it
 * reaches NAPI or after, its answer lost) still ends `create-servers 300`, `ensure-servers 50`
 * and a `create-servers` cut short by kill -9 of the daemon with exactly one admin NIC per CN
 * in NAPI: none of a deleted or half-made CN, none left `provisioning`. NAPI is read over HTTP
 * (GET /nics, as sdc-clients' listNics), not through the proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { MAIN, until } from './helpers/built-daemon.js';
import { listAll, startDaemon, startHeadnode, tempDir, type CnapiServerView, type Foreground, type NapiNicView } from './helpers/processes.js';
import { ResetProxy } from './helpers/reset-proxy.js';
import { CLI_ENV, runCli } from './helpers/run-cli.js';

describe('no NIC leaks into NAPI, with NAPI resetting reused connections', () => {
  let headnode: Foreground & { urls: { cnapi: string; vmapi: string; napi: string; imgapi: string } };
  let proxy: ResetProxy;
  let daemon: Foreground | undefined;
  let daemonDir: string;
  let headnodeDir: string;
  let napiViaProxy: string;

  beforeAll(async () => {
    headnodeDir = await tempDir('mockcloud-leaks-hn-');
    daemonDir = await tempDir('mockcloud-leaks-');
    headnode = await startHeadnode(headnodeDir);
    const napi = new URL(headnode.urls.napi);
    proxy = new ResetProxy({ host: napi.hostname, port: Number(napi.port) }, 7);
    napiViaProxy = await proxy.start();
    daemon = await startDaemon(daemonDir, { ...headnode.urls, napi: napiViaProxy });
  }, 120_000);

  afterAll(async () => {
    await daemon?.stop();
    await proxy?.stop();
    await headnode?.stop();
    for (const d of [daemonDir, headnodeDir]) if (d) await fsp.rm(d, { recursive: true, force: true });
  });

  /** The daemon's CNs on disk: uuid → admin MAC; and anything half-made or half-deleted. */
  async function onDisk(): Promise<{ admin: Map<string, string>; other: string[] }> {
    const dir = path.join(daemonDir, 'servers');
    const admin = new Map<string, string>();
    const other: string[] = [];
    for (const name of existsSync(dir) ? await fsp.readdir(dir) : []) {
      if (!/^[0-9a-f-]{36}$/.test(name)) {
        other.push(name);
        continue;
      }
      const sysinfo = JSON.parse(await fsp.readFile(path.join(dir, name, 'sysinfo.json'), 'utf8'));
      admin.set(name, sysinfo['Network Interfaces'].dnet0['MAC Address']);
    }
    return { admin, other };
  }

  /**
   * NAPI's admin NICs of mock CNs (the MAC range mockcloud draws from, outside the dev DC's
   * headnode server) are exactly the admin NICs of the CNs on disk; none is `provisioning`.
   */
  async function expectOneAdminNicPerCn(cns: number): Promise<void> {
    const headnodeMacs = new Set(
      (await listAll<CnapiServerView>(headnode.urls.cnapi, '/servers', 'extras=sysinfo'))
        .filter((s) => s.headnode)
        .flatMap((s) => Object.values(s.sysinfo['Network Interfaces'] as Record<string, { 'MAC Address': string }>).map((n) => n['MAC Address'])),
    );
    const disk = await onDisk();
    expect(disk.other).toEqual([]);
    expect(disk.admin.size).toBe(cns);
    const adminNics = async (): Promise<NapiNicView[]> =>
      (await listAll<NapiNicView>(headnode.urls.napi, '/nics', 'nic_tag=admin')).filter((n) => n.mac.startsWith('00:10:fe') && !headnodeMacs.has(n.mac));
    expect((await adminNics()).map((n) => n.mac).sort()).toEqual([...disk.admin.values()].sort());
    // Each is, or soon is, claimed by its CN's net-agent: none stays a booter-style
    // `provisioning` NIC of nobody's.
    const owner = new Map([...disk.admin].map(([uuid, mac]) => [mac, uuid]));
    const unclaimed = async (): Promise<NapiNicView[]> => (await adminNics()).filter((n) => n.belongs_to_type !== 'server' || n.belongs_to_uuid !== owner.get(n.mac));
    await until(async () => (await unclaimed()).length === 0, 60_000, 'net-agent to claim every admin NIC', 500).catch(() => undefined);
    expect(await unclaimed()).toEqual([]);
    // And in CNAPI, the same CNs (besides the headnode server).
    const inCnapi = (await listAll<CnapiServerView>(headnode.urls.cnapi, '/servers', 'extras=sysinfo')).filter((s) => !s.headnode).map((s) => s.uuid);
    expect(inCnapi.sort()).toEqual([...disk.admin.keys()].sort());
  }

  it('create-servers 300 and ensure-servers 50 leave one admin NIC per CN, though NAPI resets reused connections', async () => {
    const created = await runCli(['create-servers', '300', '--data-dir', daemonDir], { timeoutMs: 300_000 });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(/created 300\/300 servers/);
    const ensured = await runCli(['ensure-servers', '50', '-j', '--data-dir', daemonDir], { timeoutMs: 300_000 });
    expect(ensured.code, ensured.stderr).toBe(0);
    expect(JSON.parse(ensured.stdout)).toMatchObject({ after: 50, deleting: [], errors: [] });
    // The resets happened, both kinds, on the requests that mattered.
    expect(proxy.stats.resetBefore).toBeGreaterThan(10);
    expect(proxy.stats.resetAfter).toBeGreaterThan(10);
    await expectOneAdminNicPerCn(50);
  }, 600_000);

  it('a create-servers cut short by kill -9 of the daemon: the next start reclaims its NICs, and the CLI said how many were made', async () => {
    const base = (await onDisk()).admin.size;
    const cli = spawn(process.execPath, [MAIN, 'create-servers', '200', '--data-dir', daemonDir], { env: CLI_ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    cli.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const cliDone = new Promise<number | null>((resolve) => cli.once('exit', (code) => resolve(code)));
    // Kill while creations are in flight: staging dirs with their NICs asked for.
    await until(async () => {
      const names = await fsp.readdir(path.join(daemonDir, 'servers'));
      return names.filter((n) => /^[0-9a-f-]{36}$/.test(n)).length >= base + 10 && names.some((n) => n.startsWith('.creating-'));
    }, 120_000, 'creations under way', 20);
    await daemon!.kill9();
    expect(await cliDone).not.toBe(0);
    const made = (await onDisk()).admin.size - base;
    expect(err).toContain(`created ${made} of 200 servers before the daemon went away`);
    expect((await fsp.readdir(path.join(daemonDir, 'servers'))).some((n) => n.startsWith('.creating-'))).toBe(true);

    daemon = await startDaemon(daemonDir, { ...headnode.urls, napi: napiViaProxy });
    // The start cleaned up the interrupted creations (releasing their NICs in NAPI).
    await until(async () => (await onDisk()).other.length === 0, 60_000, 'interrupted creations cleaned up');
    const r = await runCli(['ensure-servers', '60', '--data-dir', daemonDir], { timeoutMs: 300_000 });
    expect(r.code, r.stderr).toBe(0);
    await expectOneAdminNicPerCn(60);
  }, 600_000);
});
