/**
 * Seeded runs, as an operator makes them: the built `mockcloud daemon --seed S --servers N
 * --mix ...` and `mockcloud create-servers` (with the daemon's seed, a mix, and a seed of its
 * own) in two fresh data dirs give CNs with identical sysinfo but for the times and the admin
 * IPs NAPI hands out; another seed gives other CNs. list-servers shows each CN's profile.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startBuiltDaemon, type BuiltDaemon } from './helpers/built-daemon.js';
import { jsonLines, runCli } from './helpers/run-cli.js';

type Obj = Record<string, any>;

/** Every CN's sysinfo.json of a data dir, by uuid, without what differs by design. */
async function sysinfos(dataDir: string): Promise<Map<string, Obj>> {
  const out = new Map<string, Obj>();
  const dir = path.join(dataDir, 'servers');
  for (const uuid of (await fsp.readdir(dir)).filter((n) => !n.startsWith('.')).sort()) {
    const s = JSON.parse(await fsp.readFile(path.join(dir, uuid, 'sysinfo.json'), 'utf8')) as Obj;
    delete s['Boot Time'];
    delete s['Zpool Creation'];
    delete s['Admin IP'];
    s['Network Interfaces'].dnet0.ip4addr = '';
    out.set(uuid, s);
  }
  return out;
}

/** The same commands in a fresh data dir; the sysinfo of every CN, and list-servers' rows. */
async function fleetFrom(seed: string): Promise<{ sysinfo: Map<string, Obj>; rows: Obj[] }> {
  let daemon: BuiltDaemon | undefined;
  try {
    daemon = await startBuiltDaemon({ args: ['--seed', seed, '--mix', 'small:2,large:1'], servers: 3 });
    const dd = ['--data-dir', daemon.dataDir];
    const mixed = await runCli(['create-servers', '6', '--mix', 'small:50,storage:50', ...dd]);
    expect(mixed.code, mixed.stderr).toBe(0);
    const own = await runCli(['create-servers', '2', '--profile', 'large', '--seed', 'another', ...dd]);
    expect(own.code, own.stderr).toBe(0);
    const list = await runCli(['list-servers', '-j', ...dd]);
    expect(list.code, list.stderr).toBe(0);
    return { sysinfo: await sysinfos(daemon.dataDir), rows: jsonLines<Obj>(list.stdout) };
  } finally {
    await daemon?.stop();
  }
}

describe('seeded fleets', () => {
  it('replay: the same seed and commands in two fresh data dirs give the same CNs; another seed others', async () => {
    const first = await fleetFrom('nightly-42');
    const second = await fleetFrom('nightly-42');
    // The headnode server, 3 from --servers, 6 from the mix, 2 with a seed of their own.
    expect(first.sysinfo.size).toBe(12);
    expect([...second.sysinfo.keys()]).toEqual([...first.sysinfo.keys()]);
    for (const [uuid, s] of first.sysinfo) expect(second.sysinfo.get(uuid), uuid).toEqual(s);

    const byProfile = (rows: Obj[]): Obj => rows.reduce((t: Obj, r) => ({ ...t, [r.profile]: (t[r.profile] ?? 0) + 1 }), {});
    expect(byProfile(first.rows)).toEqual({ virtual: 1, small: 5, large: 3, storage: 3 });
    expect(first.rows.map((r) => [r.uuid, r.profile]).sort()).toEqual(second.rows.map((r) => [r.uuid, r.profile]).sort());

    const other = await fleetFrom('nightly-43');
    const otherUuids = new Set(other.sysinfo.keys());
    // Only the two CNs made with their own seed ("another") are the same CNs.
    expect([...first.sysinfo.keys()].filter((u) => otherUuids.has(u))).toHaveLength(2);
  }, 240_000);
});
