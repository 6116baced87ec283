/**
 * The daemon with the real cn-agent server and the real file-backed vmadm, in-process, against
 * a recording CNAPI + NAPI: a VM created through a CN's cn-agent shows up in that CN's next
 * status report (the real inventory), and an original mockcloud data dir, VM included, is
 * adopted as is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import { buildSysinfo, randomMockMac } from '../../src/mockcn/sysinfo-template.js';
import { waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };
const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

interface StatusBody {
  vms: Record<string, { uuid: string; state: string; brand: string; max_physical_memory?: number; owner_uuid?: string }>;
  meminfo: { availrmem_bytes: number; total_bytes: number };
}

describe('daemon with the real cn-agent and vmadm', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let daemon: Daemon;
  const originalServer = newUuid();
  let originalVm: string;

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-e2e-'));
    triton = await new RecordingTriton().start();

    // A server as the original mockcloud left it: 4-space sysinfo, no logs/, a VM file written
    // by the original dummy vmadm (npm vmadm).
    const sysinfo = buildSysinfo({
      uuid: originalServer,
      profile: getProfile('virtual'),
      datacenterName: 'coal',
      platform: '20210826T002459Z',
      adminMac: randomMockMac(),
      adminIp: '10.99.99.77',
      extraMac: randomMockMac(),
    });
    const dir = path.join(dataDir, 'servers', originalServer);
    await fsp.mkdir(path.join(dir, 'vms'), { recursive: true });
    await fsp.writeFile(path.join(dir, 'sysinfo.json'), `${JSON.stringify(sysinfo, null, 4)}\n`);
    const DummyVmadm = require('vmadm/lib/index.dummy.js') as new (o: unknown) => {
      create(p: unknown, cb: (err: Error | null, r: { uuid: string }) => void): void;
    };
    const dummy = new DummyVmadm({ log: createQuietLogger(), serverRoot: path.join(dataDir, 'servers'), sysinfo });
    originalVm = (
      await new Promise<{ uuid: string }>((resolve, reject) =>
        dummy.create({ brand: 'joyent-minimal', alias: 'from-the-original', owner_uuid: OWNER, nics: [], ram: 512, quota: 10 }, (err, r) =>
          err ? reject(err) : resolve(r),
        ),
      )
    ).uuid;

    await fsp.writeFile(
      path.join(dataDir, 'config.json'),
      JSON.stringify({ timings: { heartbeatIntervalMs: 300, statusThrottleMs: 300, startSpreadMs: 50 } }),
    );
    const config = await resolveConfig({
      flags: { dataDir, cnapiUrl: triton.url, napiUrl: triton.url, bindIp: '127.0.0.1', portRange: '21300-21399' },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: createQuietLogger(), plugins: [] });
    await daemon.start();
  });

  afterAll(async () => {
    await daemon?.stop();
    await triton?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  function statuses(uuid: string): StatusBody[] {
    return triton.find('POST', new RegExp(`^/servers/${uuid}/events/status$`)).map((r) => r.body as StatusBody);
  }

  it('adopts the original server and reports its VM in the inventory', async () => {
    expect(daemon.fleet.get(originalServer)).toBeDefined();
    const report = await waitFor(() => statuses(originalServer).find((s) => originalVm in s.vms), 10_000, 'status with the original VM');
    expect(report.vms[originalVm]).toMatchObject({ uuid: originalVm, brand: 'joyent-minimal', state: 'running', owner_uuid: OWNER });
  });

  it('reports a VM created through the CN\'s own cn-agent in its next status', async () => {
    const res = await fetch(`${daemon.controlAddress.url}/servers`, { method: 'POST', body: JSON.stringify({ count: 2 }) });
    expect(res.status).toBe(200);
    const { created } = (await res.json()) as { created: { uuid: string }[] };
    const [a, b] = created.map((c) => c.uuid) as [string, string];
    // Every CN's socket is in the configured port range.
    for (const cn of daemon.fleet.list()) {
      expect(cn.agentAddress!.port).toBeGreaterThanOrEqual(21300);
      expect(cn.agentAddress!.port).toBeLessThanOrEqual(21399);
    }
    const reg = await waitFor(() => triton.find('POST', new RegExp(`^/servers/${a}/sysinfo$`))[0], 10_000, 'registration');
    await waitFor(() => statuses(a).length > 0, 10_000, 'first status');
    const before = statuses(a).at(-1)!;
    expect(before.vms).toEqual({});

    // As CNAPI does: the agent address from the registered sysinfo, then POST /tasks.
    const sysinfo = (reg.body as { sysinfo: Record<string, unknown> }).sysinfo;
    const vmUuid = newUuid();
    const task = await fetch(`http://${netconfig.agentIpFromSysinfo(sysinfo)}:${sysinfo['CN Agent Port']}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': a },
      body: JSON.stringify({
        task: 'machine_create',
        params: { uuid: vmUuid, brand: 'joyent-minimal', owner_uuid: OWNER, ram: 2048, max_physical_memory: 2048, quota: 20, nics: [] },
      }),
    });
    expect(task.status, await task.clone().text()).toBe(200);

    const after = await waitFor(() => statuses(a).find((s) => vmUuid in s.vms), 10_000, 'status with the new VM');
    expect(after.vms[vmUuid]).toMatchObject({ uuid: vmUuid, state: 'running', brand: 'joyent-minimal', max_physical_memory: 2048 });
    expect(before.meminfo.availrmem_bytes - after.meminfo.availrmem_bytes).toBe(2048 * 1024 * 1024);
    // The other CN's inventory is untouched.
    for (const s of statuses(b)) expect(s.vms).toEqual({});
  });
});
