/**
 * What a mock CN is, as CNAPI (and sdcadm through it) sees it: the daemon with its embedded dev
 * headnode, looked at with sdc-clients' CNAPI client.
 *
 * - sysinfo carries every key smartos-live's src/sysinfo prints in a Triton CN's global zone,
 *   consistent with the CN's hardware profile, "System Type": "Virtual" the one mark of a mock;
 *   a CN whose sysinfo.json an older mockcloud wrote gets the keys it lacks and keeps its own.
 * - server.agents lists the agents a real CN runs, each with image_uuid, uuid and version, the
 *   way sdc-cn-agent lib/backends/smartos/index.js getAgents builds the list (sysinfo
 *   "SDC Agents" entries plus image and instance uuids), and sysinfo "SDC Agents" agrees.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import { randomMockMac } from '../../src/mockcn/sysinfo-template.js';
import { call, closeClient, cnapiClient, waitFor, type Client } from '../headnode/helpers/sdc-clients.js';
import { REAL_AGENTS, REAL_SYSINFO_KEYS } from '../mockcn/real-cn.js';
import { createServers } from './helpers/control.js';

const log = createQuietLogger('cn-identity-test');

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Obj = Record<string, any>;

describe('a mock CN as CNAPI sees it', () => {
  const dirs: string[] = [];
  const daemons: Daemon[] = [];
  const clients: Client[] = [];

  afterEach(async () => {
    for (const c of clients.splice(0)) closeClient(c);
    for (const d of daemons.splice(0)) await d.stop();
    for (const dir of dirs.splice(0)) await fsp.rm(dir, { recursive: true, force: true });
  });

  async function newDataDir(): Promise<string> {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-cn-identity-'));
    dirs.push(dir);
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ timings: { startSpreadMs: 50 } }));
    return dir;
  }

  async function startDaemon(dataDir: string): Promise<{ daemon: Daemon; cnapi: Client }> {
    const config = await resolveConfig({ flags: { dataDir, cmonPort: 0 }, env: {}, mdata: noMdata });
    const daemon = new Daemon({ config, log, plugins: [], embeddedHeadnode: {} });
    daemons.push(daemon);
    await daemon.start();
    const cnapi = cnapiClient(daemon.config.urls.cnapi!);
    clients.push(cnapi);
    return { daemon, cnapi };
  }

  /** ServerGet once CNAPI has the CN's sysinfo and cn-agent's agents POST. */
  function serverWithAgents(cnapi: Client, uuid: string): Promise<Obj> {
    return waitFor(async () => {
      const s = (await call<Obj>(cnapi, 'getServer', uuid)) as Obj;
      return s.sysinfo && Array.isArray(s.agents) && s.agents.some((a: Obj) => a.image_uuid) ? s : undefined;
    }, 15_000);
  }

  it('sysinfo has every key of a real CN, consistent with the profile; agents are the real set with image, instance and version', async () => {
    const { daemon, cnapi } = await startDaemon(await newDataDir());
    const [large] = (await createServers(daemon, { count: 1, profile: 'large' })) as [string];
    const [plain] = (await createServers(daemon, { count: 1 })) as [string];

    for (const [uuid, profileName] of [[large, 'large'], [plain, 'virtual']] as const) {
      const server = await serverWithAgents(cnapi, uuid);
      // ServerList with extras=sysinfo answers the same sysinfo (sdc-cnapi lib/endpoints/servers.js).
      const listed = (await call<Obj[]>(cnapi, 'listServers', { uuids: uuid, extras: 'sysinfo' })) as Obj[];
      expect(listed).toHaveLength(1);
      const si = listed[0]!.sysinfo as Obj;
      expect(si).toEqual(server.sysinfo);

      // Every key a real CN prints, in its order; then only what mockcloud adds: the agent
      // address and the daemon hosting the CN.
      expect(Object.keys(si).filter((k) => REAL_SYSINFO_KEYS.includes(k))).toEqual(REAL_SYSINFO_KEYS);
      expect(Object.keys(si).filter((k) => !REAL_SYSINFO_KEYS.includes(k)).sort()).toEqual(['CN Agent IP', 'CN Agent Port', 'Mockcloud Daemon']);
      expect(si['System Type']).toBe('Virtual');

      const p = getProfile(profileName);
      expect(si).toMatchObject({
        UUID: uuid,
        Product: p.product,
        'CPU Type': p.cpuType,
        'HVM API': true,
        'Bhyve Capable': true,
        'Admin NIC Tag': 'admin',
        'CPU Physical Cores': p.cpuPhysicalCores,
        'CPU Socket Count': p.cpuPhysicalCores,
        'CPU Core Count': p.cpuCoreCount,
        'CPU Total Cores': p.cpuTotalCores,
        'CPU Count': p.cpuTotalCores,
        'CPU Online Count': p.cpuTotalCores,
        'MiB of Memory': String(p.memoryMiB),
        'Zpool Encrypted': false,
        'Zpool Recovery': {},
        'Zpool Size in GiB': p.zpoolSizeGiB,
        Psrinfo: { smt_enabled: 'true' },
      });
      // The admin NIC tag names the interface whose IP is "Admin IP".
      const adminNic = Object.values(si['Network Interfaces'] as Record<string, Obj>).find((n) => n['NIC Names'].includes(si['Admin NIC Tag']));
      expect(adminNic?.ip4addr).toBe(si['Admin IP']);
      // CNAPI's figures come from it.
      expect(server.ram).toBe(p.memoryMiB);
      expect(server.sysinfo['CPU Total Cores']).toBe(p.cpuTotalCores);

      // server.agents: the agents a real CN runs, each as sdc-cn-agent's smartos getAgents posts it.
      const agents = server.agents as Obj[];
      expect(agents.map((a) => a.name).sort()).toEqual(REAL_AGENTS);
      for (const a of agents) {
        expect(Object.keys(a), a.name).toEqual(['name', 'version', 'image_uuid', 'uuid']);
        expect(a.version, a.name).toMatch(/^\d+\.\d+\.\d+$/);
        expect(a.image_uuid, a.name).toMatch(UUID_RE);
        expect(a.uuid, a.name).toMatch(UUID_RE);
      }
      // Instances are per CN, images per agent build; "SDC Agents" lists the same agents and versions.
      expect(new Set(agents.map((a) => a.uuid)).size).toBe(agents.length);
      expect(si['SDC Agents']).toEqual(agents.map((a) => ({ name: a.name, version: a.version })));
    }
    const [a, b] = [await serverWithAgents(cnapi, large), await serverWithAgents(cnapi, plain)];
    const byName = (s: Obj) => new Map((s.agents as Obj[]).map((x) => [x.name as string, x]));
    for (const name of REAL_AGENTS) {
      expect(byName(a).get(name)!.image_uuid).toBe(byName(b).get(name)!.image_uuid);
      expect(byName(a).get(name)!.uuid).not.toBe(byName(b).get(name)!.uuid);
    }
  }, 60_000);

  it('completes the sysinfo of a CN an older mockcloud wrote, keeping what it has', async () => {
    const dataDir = await newDataDir();
    const uuid = newUuid();
    // The original mockcloud template (cn-agent-spec §5.3): none of the keys newer platforms
    // print, "SDC Agents" empty, plus an operator's own key and hostname.
    const old = {
      'System Type': 'Virtual', 'SDC Version': '7.0', Manufacturer: 'Joyent', Product: 'Joyent-Virtual-CN-0001',
      'SKU Number': '90210 rev 42', 'HW Version': '1.0', 'HW Family': 'JXX-0001', Setup: 'true', 'VM Capable': true,
      'Bhyve Capable': true, 'Bhyve Max Vcpus': 32, 'CPU Type': 'Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz',
      'CPU Virtualization': 'vmx', 'CPU Physical Cores': 2, 'CPU Total Cores': 32, 'MiB of Memory': '262111',
      Zpool: 'zones', 'Zpool Disks': 'c0t5000ABCDEFd0', 'Zpool Profile': 'mirror',
      Disks: { c0t5000ABCDEFd0: { 'Size in GB': 600 } }, 'Boot Parameters': { console: 'ttyb', boot_args: '', bootargs: '' },
      'SDC Agents': [],
      'Network Interfaces': { dnet0: { ip4addr: '10.99.99.77', 'Link Status': 'up', 'NIC Names': ['admin'], 'MAC Address': randomMockMac() } },
      'Virtual Network Interfaces': {}, 'Link Aggregations': {}, 'Datacenter Name': 'coal', UUID: uuid,
      'Admin IP': '10.99.99.77', 'Zpool Size in GiB': 3770, 'Live Image': '20210826T002459Z', 'Boot Time': '1546300800',
      Hostname: 'OLDTIMER', 'Serial Number': uuid.slice(0, 8).toUpperCase(), 'Zpool Creation': 1546300800,
      'Operator Note': 'rack 7',
    };
    await fsp.mkdir(path.join(dataDir, 'servers', uuid), { recursive: true });
    await fsp.writeFile(path.join(dataDir, 'servers', uuid, 'sysinfo.json'), `${JSON.stringify(old, null, 4)}\n`);
    const { cnapi } = await startDaemon(dataDir);

    const server = await serverWithAgents(cnapi, uuid);
    const si = server.sysinfo as Obj;
    expect(Object.keys(si).filter((k) => REAL_SYSINFO_KEYS.includes(k))).toEqual(REAL_SYSINFO_KEYS);
    for (const [k, v] of Object.entries(old)) if (k !== 'SDC Agents') expect(si[k], k).toEqual(v);
    expect(si).toMatchObject({
      'HVM API': true,
      'Admin NIC Tag': 'admin',
      'CPU Socket Count': 2,
      'CPU Core Count': 16,
      'CPU Online Count': 32,
      'CPU Count': 32,
      'Zpool Encrypted': false,
      'Zpool Recovery': {},
      Psrinfo: { smt_enabled: 'true' },
    });
    expect((si['SDC Agents'] as Obj[]).map((a) => a.name)).toEqual(REAL_AGENTS);
    expect(server.hostname).toBe('OLDTIMER');
    // The file itself is left as it was: completing is a reading, not a rewrite.
    expect(JSON.parse(await fsp.readFile(path.join(dataDir, 'servers', uuid, 'sysinfo.json'), 'utf8'))).toEqual(old);
  }, 60_000);
});
