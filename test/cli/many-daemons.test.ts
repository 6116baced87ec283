/**
 * Many daemons, one Triton (issue 14): two `mockcloud daemon`s on one host (one shared bind IP)
 * register CNs with one `mockcloud headnode`, at the same time. Nothing collides in CNAPI or
 * NAPI (uuids, hostnames, serial numbers, MACs, admin IPs, agent addresses), each CN names the
 * daemon hosting it (sysinfo `Mockcloud Daemon`), ensure-servers and delete-servers --all count
 * and touch only their own daemon's CNs, `list-servers --all-daemons` shows all of them with
 * their daemon, and nothing is left behind in NAPI. Triton is read over HTTP as sdc-clients
 * reads it (CNAPI GET /servers, NAPI GET /nics).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { until } from './helpers/built-daemon.js';
import { listAll, startDaemon, startHeadnode, tempDir, type CnapiServerView, type Foreground, type NapiNicView } from './helpers/processes.js';
import { jsonLines, runCli } from './helpers/run-cli.js';

interface Row {
  uuid: string;
  hostname: string;
  daemon: string | null;
  role: string;
}

describe('two daemons against one mockcloud headnode', () => {
  let headnode: Foreground & { urls: { cnapi: string; vmapi: string; napi: string; imgapi: string } };
  let a: Foreground;
  let b: Foreground;
  const dirs: string[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) dirs.push(await tempDir('mockcloud-many-'));
    headnode = await startHeadnode(dirs[0]!);
    [a, b] = await Promise.all([startDaemon(dirs[1]!, headnode.urls), startDaemon(dirs[2]!, headnode.urls)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await headnode?.stop();
    for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
  });

  const daemonOf = async (f: Foreground): Promise<string> => {
    const st = JSON.parse((await runCli(['status', '-j', '--data-dir', f.dataDir])).stdout) as { hostedBy: string };
    return st.hostedBy;
  };

  /** CNAPI's mock CNs and NAPI's NICs, once net-agent has synced every CN's NICs. */
  async function triton(): Promise<{ servers: CnapiServerView[]; nics: NapiNicView[] }> {
    const servers = (await listAll<CnapiServerView>(headnode.urls.cnapi, '/servers', 'extras=sysinfo')).filter(
      (s) => s.sysinfo?.['System Type'] === 'Virtual',
    );
    const nics = await listAll<NapiNicView>(headnode.urls.napi, '/nics');
    return { servers, nics };
  }

  it('create at once in both, converge each, and nothing collides or is left over', async () => {
    const [ca, cb] = await Promise.all([
      runCli(['create-servers', '40', '--data-dir', a.dataDir], { timeoutMs: 180_000 }),
      runCli(['create-servers', '40', '--data-dir', b.dataDir], { timeoutMs: 180_000 }),
    ]);
    expect(ca.code, ca.stderr).toBe(0);
    expect(cb.code, cb.stderr).toBe(0);
    // Each converges on its own count: it deletes only its own newest CNs.
    const [ea, eb] = await Promise.all([
      runCli(['ensure-servers', '30', '-j', '--data-dir', a.dataDir], { timeoutMs: 180_000 }),
      runCli(['ensure-servers', '35', '-j', '--data-dir', b.dataDir], { timeoutMs: 180_000 }),
    ]);
    expect(ea.code, ea.stderr).toBe(0);
    expect(eb.code, eb.stderr).toBe(0);
    const da = await daemonOf(a);
    const db = await daemonOf(b);
    expect(JSON.parse(ea.stdout)).toMatchObject({ daemon: da, before: 40, after: 30 });
    expect(JSON.parse(eb.stdout)).toMatchObject({ daemon: db, before: 40, after: 35 });
    expect(da).not.toBe(db);

    // CNAPI: the headnode server and 65 CNs, each naming its daemon; and net-agent has put
    // every CN's two NICs into NAPI.
    const cnMacs = (s: CnapiServerView): string[] => Object.values(s.sysinfo['Network Interfaces'] as Record<string, { 'MAC Address': string }>).map((n) => n['MAC Address']);
    const seen = await until(async () => {
      const t = await triton();
      if (t.servers.length !== 66) return undefined;
      const napiMacs = new Set(t.nics.map((n) => n.mac));
      return t.servers.every((s) => cnMacs(s).every((m) => napiMacs.has(m))) ? t : undefined;
    }, 60_000, 'CNAPI with 66 mock CNs and NAPI with their NICs', 500);
    const { servers, nics } = seen;
    const byDaemon = (d: string): CnapiServerView[] => servers.filter((s) => s.sysinfo['Mockcloud Daemon'] === d);
    expect(byDaemon(da)).toHaveLength(30);
    expect(byDaemon(db)).toHaveLength(35);
    const hn = servers.filter((s) => s.headnode);
    expect(hn).toHaveLength(1);
    expect(hn[0]!.sysinfo['Mockcloud Daemon']).toBe(await daemonOf(headnode));
    // The key sits beside the agent address, as the CN reports it.
    const keys = Object.keys(byDaemon(da)[0]!.sysinfo);
    expect(keys.slice(keys.indexOf('CN Agent IP'), keys.indexOf('CN Agent IP') + 3)).toEqual(['CN Agent IP', 'CN Agent Port', 'Mockcloud Daemon']);

    // No collisions, whichever daemon made them.
    const unique = (what: string, values: unknown[]): void => {
      expect(new Set(values.map(String)).size, what).toBe(values.length);
    };
    unique('uuids', servers.map((s) => s.uuid));
    unique('hostnames', servers.map((s) => s.hostname));
    unique('serial numbers', servers.map((s) => s.sysinfo['Serial Number']));
    unique('MACs', servers.flatMap(cnMacs));
    unique('admin IPs', servers.map((s) => s.sysinfo['Admin IP']));
    unique('agent addresses', servers.map((s) => `${s.sysinfo['CN Agent IP']}:${s.sysinfo['CN Agent Port']}`));
    // Both daemons share one bind IP: the ports tell their CNs apart.
    expect(new Set(servers.filter((s) => !s.headnode).map((s) => s.sysinfo['CN Agent IP']))).toEqual(new Set(['127.0.0.1']));

    // NAPI: every NIC of a mock CN's MAC range belongs to a CN CNAPI has; the 15 deleted CNs left none.
    const cnMacSet = new Set(servers.flatMap(cnMacs));
    const mockNics = nics.filter((n) => n.mac.startsWith('00:10:fe'));
    expect(mockNics.map((n) => n.mac).sort()).toEqual([...cnMacSet].sort());
    expect(mockNics.filter((n) => n.state === 'provisioning' && n.belongs_to_type === 'other')).toEqual([]);
    unique('NAPI IPs', mockNics.filter((n) => n.ip).map((n) => n.ip));
  }, 300_000);

  it('list-servers --all-daemons shows every mock CN with its daemon; delete-servers --all deletes only its own', async () => {
    const da = await daemonOf(a);
    const db = await daemonOf(b);
    const all = jsonLines<Row>((await runCli(['list-servers', '--all-daemons', '-j', '--data-dir', a.dataDir])).stdout);
    expect(all).toHaveLength(66);
    expect(all.filter((r) => r.daemon === da)).toHaveLength(30);
    expect(all.filter((r) => r.daemon === db)).toHaveLength(35);
    expect(all.filter((r) => r.role === 'headnode')).toHaveLength(1);
    const table = await runCli(['list-servers', '--all-daemons', '-H', '-o', 'hostname,daemon', '--data-dir', b.dataDir]);
    expect(table.stdout.trim().split('\n')).toHaveLength(66);
    expect(table.stdout).toContain(da);
    // This daemon's own listing says which daemon it is.
    const own = jsonLines<Row>((await runCli(['list-servers', '-j', '--data-dir', a.dataDir])).stdout);
    expect(own).toHaveLength(30);
    expect(new Set(own.map((r) => r.daemon))).toEqual(new Set([da]));

    const del = await runCli(['delete-servers', '--all', '--data-dir', a.dataDir], { timeoutMs: 120_000 });
    expect(del.code, del.stderr).toBe(0);
    const left = (await listAll<CnapiServerView>(headnode.urls.cnapi, '/servers', 'extras=sysinfo')).filter((s) => s.sysinfo?.['System Type'] === 'Virtual');
    expect(left.filter((s) => s.sysinfo['Mockcloud Daemon'] === da)).toEqual([]);
    expect(left.filter((s) => s.sysinfo['Mockcloud Daemon'] === db)).toHaveLength(35);
    expect((await runCli(['ensure-servers', '35', '--data-dir', b.dataDir])).stdout).toMatch(/nothing to do/);
  }, 180_000);
});
