/**
 * Server directories: creation (staged, durable, complete or absent), the agents directory,
 * removal, and adopting a data dir made by the original mockcloud as is.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { readAgents, BUILTIN_AGENTS, materializeAgentsDir } from '../../src/mockcn/agents-dir.js';
import { creatingDir, serverPaths } from '../../src/mockcn/layout.js';
import { loadServer } from '../../src/mockcn/load-server.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import {
  abortServerCreation,
  beginServerCreation,
  finishServerCreation,
  readCreateMarker,
  removeServerDir,
  scanServers,
} from '../../src/mockcn/server-dir.js';
import { buildSysinfo, randomMockMac } from '../../src/mockcn/sysinfo-template.js';
import type { VmStore } from '../../src/vmadm/types.js';
import { REAL_AGENTS } from './real-cn.js';

const require = createRequire(import.meta.url);

function sysinfoFor(uuid: string) {
  return buildSysinfo({
    uuid,
    profile: getProfile(undefined),
    datacenterName: 'coal',
    platform: '20210826T002459Z',
    adminMac: randomMockMac(),
    adminIp: '10.99.99.50',
    extraMac: randomMockMac(),
  });
}

const noVms = async () => ({ size: 0 }) as unknown as VmStore;

function versionAtLeast(v: string, min: string): boolean {
  const a = v.split('.').map(Number);
  const b = min.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

describe('server directories', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-servers-'));
  });
  afterEach(async () => {
    await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('creates the original layout with sysinfo and the agents a Triton CN runs', async () => {
    const uuid = newUuid();
    await beginServerCreation(dataDir, { uuid, startedAt: new Date().toISOString(), napiMacs: ['00:10:fe:00:00:01'] });
    // Until finished, the server is only a hidden staging dir with its marker.
    expect((await scanServers(dataDir)).servers).toEqual([]);
    expect((await scanServers(dataDir)).creating).toEqual([uuid]);
    expect((await readCreateMarker(dataDir, uuid))?.napiMacs).toEqual(['00:10:fe:00:00:01']);

    const sysinfo = sysinfoFor(uuid);
    await finishServerCreation(dataDir, sysinfo);
    const scan = await scanServers(dataDir);
    expect(scan.servers).toEqual([uuid]);
    expect(scan.creating).toEqual([]);

    const p = serverPaths(dataDir, uuid);
    expect(JSON.parse(await fsp.readFile(p.sysinfo, 'utf8'))).toEqual(sysinfo);
    await expect(fsp.stat(path.join(p.dir, 'create.json'))).rejects.toThrow();
    // No agents dir is written: a new CN reports the built-in agents, with stable instance uuids.
    await expect(fsp.stat(p.agents)).rejects.toThrow();
    const agents = await readAgents(p.agents, uuid);
    // The set a real CN runs out of /opt/smartdc/agents.
    expect(agents.map((a) => a.name)).toEqual(REAL_AGENTS);
    for (const a of agents) {
      expect(a.version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(a.image_uuid).toMatch(/^[0-9a-f-]{36}$/);
      expect(a.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    expect(await readAgents(p.agents, uuid)).toEqual(agents);
    expect(versionAtLeast(agents.find((a) => a.name === 'cn-agent')!.version!, '2.15.0')).toBe(true);
    // Instance uuids are per CN; image uuids per agent build.
    const other = newUuid();
    await beginServerCreation(dataDir, { uuid: other, startedAt: '', napiMacs: [] });
    await finishServerCreation(dataDir, sysinfoFor(other));
    const otherAgents = await readAgents(serverPaths(dataDir, other).agents, other);
    expect(otherAgents.find((a) => a.name === 'cn-agent')!.uuid).not.toBe(agents.find((a) => a.name === 'cn-agent')!.uuid);
    expect(otherAgents.find((a) => a.name === 'cn-agent')!.image_uuid).toBe(BUILTIN_AGENTS[0]!.imageUuid);

    // Written out (before an agents task changes them), the files say what was reported.
    expect(await materializeAgentsDir(p.agents, uuid)).toBe(true);
    expect(await materializeAgentsDir(p.agents, uuid)).toBe(false);
    for (const a of agents) {
      const dir = path.join(p.agents, a.name);
      expect(JSON.parse(await fsp.readFile(path.join(dir, 'package.json'), 'utf8'))).toMatchObject({ name: a.name, version: a.version });
      expect(await fsp.readFile(path.join(dir, 'image_uuid'), 'utf8')).toBe(`${a.image_uuid}\n`);
      expect(await fsp.readFile(path.join(dir, 'instance_uuid'), 'utf8')).toBe(`${a.uuid}\n`);
    }
    expect(await readAgents(p.agents, uuid)).toEqual(agents);
    expect((await fsp.readdir(p.dir)).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('refuses a second creation of the same uuid, and aborts cleanly', async () => {
    const uuid = newUuid();
    await beginServerCreation(dataDir, { uuid, startedAt: '', napiMacs: [] });
    await expect(beginServerCreation(dataDir, { uuid, startedAt: '', napiMacs: [] })).rejects.toThrow(/already being created/);
    await abortServerCreation(dataDir, uuid);
    await expect(fsp.stat(creatingDir(dataDir, uuid))).rejects.toThrow();
  });

  it('removes a server dir atomically', async () => {
    const uuid = newUuid();
    await beginServerCreation(dataDir, { uuid, startedAt: '', napiMacs: [] });
    await finishServerCreation(dataDir, sysinfoFor(uuid));
    await removeServerDir(dataDir, uuid);
    expect(await scanServers(dataDir)).toEqual({ servers: [], creating: [], deleting: [], other: [] });
    await removeServerDir(dataDir, uuid); // already gone: fine
  });

  it('reads agents the way the original did: dir name without package.json, no bad uuids', async () => {
    const agentsDir = path.join(dataDir, 'agents');
    await fsp.mkdir(path.join(agentsDir, 'config-agent'), { recursive: true });
    await fsp.mkdir(path.join(agentsDir, 'smartlogin'), { recursive: true });
    await fsp.writeFile(path.join(agentsDir, 'config-agent', 'package.json'), JSON.stringify({ name: 'config-agent', version: '1.9.0' }));
    await fsp.writeFile(path.join(agentsDir, 'config-agent', 'image_uuid'), 'not-a-uuid\n');
    const id = newUuid();
    await fsp.writeFile(path.join(agentsDir, 'smartlogin', 'instance_uuid'), `${id}\n`);
    expect(await readAgents(agentsDir, newUuid())).toEqual([
      { name: 'config-agent', version: '1.9.0' },
      { name: 'smartlogin', uuid: id },
    ]);
    // An empty dir (every agent uninstalled) is no agents; a missing one the built-ins.
    await fsp.mkdir(path.join(dataDir, 'empty'));
    expect(await readAgents(path.join(dataDir, 'empty'), newUuid())).toEqual([]);
    expect((await readAgents(path.join(dataDir, 'missing'), newUuid())).map((a) => a.name)).toEqual(BUILTIN_AGENTS.map((a) => a.name).sort());
  });

  it('adopts a data dir made by the original mockcloud as is', async () => {
    // As the original create-server and agentsshar install left it, with a VM written by the
    // original dummy vmadm (npm vmadm), a stale "CN Agent Port" in the file, and no logs/ yet.
    const uuid = newUuid();
    const dir = path.join(dataDir, 'servers', uuid);
    await fsp.mkdir(path.join(dir, 'vms'), { recursive: true });
    const original = { ...sysinfoFor(uuid), 'CN Agent IP': '10.0.0.9', 'CN Agent Port': 33333 };
    await fsp.writeFile(path.join(dir, 'sysinfo.json'), `${JSON.stringify(original, null, 4)}\n`);
    const agentDir = path.join(dir, 'agents', 'cn-agent');
    await fsp.mkdir(agentDir, { recursive: true });
    const image = newUuid();
    const instance = newUuid();
    await fsp.writeFile(
      path.join(agentDir, 'package.json'),
      JSON.stringify({ name: 'cn-agent', description: 'Triton Compute Node Agent', version: '2.14.7', dependencies: {} }, null, 2),
    );
    await fsp.writeFile(path.join(agentDir, 'image_uuid'), `${image}\n`);
    await fsp.writeFile(path.join(agentDir, 'instance_uuid'), `${instance}\n`);

    const DummyVmadm = require('vmadm/lib/index.dummy.js') as new (o: unknown) => {
      create(p: unknown, cb: (err: Error | null, r: { uuid: string }) => void): void;
    };
    const vmadm = new DummyVmadm({ log: createQuietLogger(), serverRoot: path.join(dataDir, 'servers'), sysinfo: original });
    const vm = await new Promise<{ uuid: string }>((resolve, reject) =>
      vmadm.create({ brand: 'joyent-minimal', alias: 'old', nics: [], ram: 128 }, (err, r) => (err ? reject(err) : resolve(r))),
    );

    expect((await scanServers(dataDir)).servers).toEqual([uuid]);
    let opened: { uuid: string; identity: unknown } | undefined;
    const cn = await loadServer(dataDir, uuid, async (u, identity) => {
      opened = { uuid: u, identity };
      return { size: 1 } as unknown as VmStore;
    });
    expect(cn.uuid).toBe(uuid);
    expect(opened).toEqual({ uuid, identity: { UUID: uuid, 'Datacenter Name': 'coal', 'Live Image': '20210826T002459Z' } });
    // The stale agent address from the file is not trusted; the CN learns its own at attach.
    expect(cn.sysinfo['CN Agent Port']).toBeUndefined();
    cn.agentAddress = { ip: '127.0.0.1', port: 40001 };
    expect(cn.sysinfo).toMatchObject({ 'CN Agent IP': '127.0.0.1', 'CN Agent Port': 40001, Hostname: original.Hostname });
    expect(cn.agents).toEqual([{ name: 'cn-agent', version: '2.14.7', image_uuid: image, uuid: instance }]);
    expect(cn.agentVersion('cn-agent')).toBe('2.14.7');
    // Nothing of the original's files was rewritten.
    expect(await fsp.readFile(path.join(dir, 'sysinfo.json'), 'utf8')).toBe(`${JSON.stringify(original, null, 4)}\n`);
    expect(JSON.parse(await fsp.readFile(path.join(dir, 'vms', `${vm.uuid}.json`), 'utf8')).alias).toBe('old');
  });

  it('refuses a server whose sysinfo is missing, broken or names another uuid', async () => {
    const uuid = newUuid();
    const dir = path.join(dataDir, 'servers', uuid);
    await fsp.mkdir(dir, { recursive: true });
    await expect(loadServer(dataDir, uuid, noVms)).rejects.toThrow(/sysinfo.json is missing/);
    await fsp.writeFile(path.join(dir, 'sysinfo.json'), '{"UUID": ');
    await expect(loadServer(dataDir, uuid, noVms)).rejects.toThrow(/not valid JSON/);
    await fsp.writeFile(path.join(dir, 'sysinfo.json'), JSON.stringify(sysinfoFor(newUuid())));
    await expect(loadServer(dataDir, uuid, noVms)).rejects.toThrow(/does not match server/);
  });

  it('tells server dirs from staging dirs and strays', async () => {
    const a = newUuid();
    const b = newUuid();
    await fsp.mkdir(path.join(dataDir, 'servers', a), { recursive: true });
    await fsp.mkdir(path.join(dataDir, 'servers', `.creating-${b}`));
    await fsp.mkdir(path.join(dataDir, 'servers', `.deleting-${b}`));
    await fsp.writeFile(path.join(dataDir, 'servers', 'README'), 'x');
    expect(await scanServers(dataDir)).toEqual({ servers: [a], creating: [b], deleting: [b], other: ['README'] });
  });
});
