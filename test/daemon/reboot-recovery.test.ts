/**
 * A reboot the daemon acknowledged (server_reboot answered, sdc-cn-agent
 * lib/backends/smartos/tasks/server_reboot.js) is never lost: a daemon stopped while a CN is
 * down boots that CN when it starts again (new Boot Time, autoboot VMs running), as the real
 * CN would have booted whatever happened to the process that asked for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig, type DaemonConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { REBOOT_MARKER_FILE } from '../../src/mockcn/power-cycle.js';
import { waitFor } from './helpers/fakes.js';
import { RecordingTriton } from './helpers/recording-triton.js';

const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

describe('a reboot interrupted by a daemon restart', () => {
  let dataDir: string;
  let triton: RecordingTriton;
  let config: DaemonConfig;
  const daemons: Daemon[] = [];

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-reboot-'));
    triton = await new RecordingTriton().start();
    await fsp.writeFile(path.join(dataDir, 'config.json'), JSON.stringify({ timings: { heartbeatIntervalMs: 200, startSpreadMs: 50 } }));
    config = await resolveConfig({
      flags: { dataDir, cnapiUrl: triton.url, napiUrl: triton.url, bindIp: '127.0.0.1', bootSeconds: 600 },
      env: {},
      mdata: noMdata,
    });
  });

  afterAll(async () => {
    for (const d of daemons) await d.stop();
    await triton?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  async function start(): Promise<Daemon> {
    const d = new Daemon({ config, log: createQuietLogger(), plugins: [] });
    daemons.push(d);
    await d.start();
    return d;
  }

  it('boots the CN when the daemon loads it again', async () => {
    const first = await start();
    const res = await fetch(`${first.controlAddress.url}/servers`, { method: 'POST', body: JSON.stringify({ count: 1 }) });
    expect(res.status).toBe(200);
    const [{ uuid }] = ((await res.json()) as { created: { uuid: string }[] }).created as [{ uuid: string }];
    const cn = first.fleet.get(uuid)!;
    await waitFor(() => cn.registered, 10_000, 'registered');
    const vm = await cn.vms.create({ brand: 'joyent-minimal', alias: 'web', owner_uuid: OWNER, max_physical_memory: 128 });
    const bootTime = String(cn.sysinfo['Boot Time']);

    // As CNAPI sends it: server_reboot on the CN's cn-agent. The boot time is 600 s: the
    // daemon stops while the CN is down.
    const agent = `http://${cn.agentAddress!.ip}:${cn.agentAddress!.port}`;
    const r = await fetch(`${agent}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': uuid },
      body: JSON.stringify({ task: 'server_reboot', params: {} }),
    });
    expect(r.status).toBe(200);
    await waitFor(() => cn.power === 'down', 10_000, 'the CN down');
    expect(cn.vms.get(vm.uuid)).toMatchObject({ state: 'stopped', autoboot: true });
    await first.stop();
    await expect(fsp.access(path.join(dataDir, 'servers', uuid, REBOOT_MARKER_FILE))).resolves.toBeUndefined();

    const second = await start();
    const again = second.fleet.get(uuid)!;
    await waitFor(() => again.vms.get(vm.uuid)?.state === 'running', 10_000, 'the autoboot VM running');
    await waitFor(() => String(again.sysinfo['Boot Time']) !== bootTime, 10_000, 'a new Boot Time');
    expect(Number(again.sysinfo['Boot Time'])).toBeGreaterThan(Number(bootTime));
    await waitFor(
      () => triton.find('POST', new RegExp(`^/servers/${uuid}/sysinfo$`)).some((q) => (q.body as { sysinfo: Record<string, unknown> }).sysinfo['Boot Time'] === again.sysinfo['Boot Time']),
      10_000,
      'the new Boot Time registered with CNAPI',
    );
    const marker = path.join(dataDir, 'servers', uuid, REBOOT_MARKER_FILE);
    await waitFor(() => fsp.access(marker).then(() => false, () => true), 10_000, 'the reboot marker removed once booted');
  });
});
