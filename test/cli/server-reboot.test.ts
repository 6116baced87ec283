/**
 * CNAPI's `POST /servers/:uuid/reboot` end to end against the built daemon's embedded dev
 * headnode, seen through sdc-clients (CNAPI `rebootServer` / `getServer`, VMAPI `getVm`):
 * the server's heartbeats stop and its VMs go stopped, its cn-agent refuses connections, then
 * it registers a new Boot Time, runs again, and only its autoboot VMs come back.
 *
 * Follows sdc-cn-agent lib/backends/smartos/tasks/server_reboot.js and bin/reboot-server.js
 * (answer at once, then `shutdown -i 6`), sdc-cnapi lib/endpoints/servers.js (ServerReboot),
 * lib/workflows/server-reboot.js (transitional_status 'rebooting') and lib/models/server.js
 * (the mark clears once the server runs with a new last_boot). The boot lasts 3 s
 * (`--boot-seconds`), heartbeats every 250 ms (config `timings`).
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, closeClient, cnapiClient, vmapiClient, type Client } from '../headnode/helpers/sdc-clients.js';
import { agentUrlOf, postTask, startBuiltDaemon, until, type BuiltDaemon } from './helpers/built-daemon.js';

const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

interface Server {
  uuid: string;
  /** The dev DC's headnode server (issue 20): the tests use a compute node. */
  headnode?: boolean;
  status: string;
  transitional_status?: string;
  last_boot?: string;
  last_heartbeat?: string | null;
  sysinfo: Record<string, unknown>;
  vms?: Record<string, { state: string }>;
}

function connectResult(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), hostname);
    sock.once('connect', () => {
      sock.destroy();
      resolve('open');
    });
    sock.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('server reboot through CNAPI', () => {
  let daemon: BuiltDaemon;
  let cnapi: Client;
  let vmapi: Client;

  beforeAll(async () => {
    daemon = await startBuiltDaemon({
      args: ['--boot-seconds', '3'],
      config: { timings: { heartbeatIntervalMs: 250, statusThrottleMs: 250, startSpreadMs: 100 } },
    });
    cnapi = cnapiClient(daemon.urls.cnapi);
    vmapi = vmapiClient(daemon.urls.vmapi);
  });
  afterAll(async () => {
    closeClient(cnapi);
    closeClient(vmapi);
    await daemon?.stop();
  });

  it('stops heartbeats and VMs, refuses tasks while down, then boots with a new Boot Time and its autoboot VMs', async () => {
    const listed = await until(
      async () => (await call<Server[]>(cnapi, 'listServers', { extras: 'last_heartbeat' })).find(
        (s) => s.status === 'running' && s.headnode !== true && typeof s.last_heartbeat === 'string',
      ),
      30_000,
      'a running server',
    );
    const getServer = () => call<Server>(cnapi, 'getServer', listed.uuid);
    const before = await getServer();
    const agent = agentUrlOf(before.sysinfo);

    // Three VMs made as CNAPI makes them: `auto` boots with the CN, `manual` runs but has
    // autoboot off, `off` is stopped.
    const vm = { auto: randomUUID(), manual: randomUUID(), off: randomUUID() };
    for (const [alias, uuid] of Object.entries(vm)) {
      const r = await postTask(agent, before.uuid, 'machine_create', {
        uuid,
        alias,
        brand: 'joyent-minimal',
        owner_uuid: OWNER,
        ram: 128,
        max_physical_memory: 128,
        quota: 5,
        nics: [],
        autoboot: alias !== 'off',
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    expect((await postTask(agent, before.uuid, 'machine_update', { uuid: vm.manual, autoboot: false })).status).toBe(200);
    const states = (s: Server) => [vm.auto, vm.manual, vm.off].map((u) => s.vms?.[u]?.state);
    const up = await until(async () => {
      const s = await getServer();
      return states(s).join() === 'running,running,stopped' && s.last_heartbeat ? s : undefined;
    }, 20_000, 'the VMs in CNAPI');
    const bootTime = String(up.sysinfo['Boot Time']);
    const vmapiState = async (uuid: string): Promise<string | undefined> =>
      (await call<{ state: string }>(vmapi, 'getVm', { uuid }).catch(() => undefined))?.state;
    await until(async () => (await vmapiState(vm.auto)) === 'running', 20_000, 'VMAPI: auto running');

    const job = await call<{ job_uuid: string }>(cnapi, 'rebootServer', up.uuid);
    expect(job.job_uuid).toMatch(/^[0-9a-f-]{36}$/);

    // Shut down: the last status report shows the running VMs stopped; nothing beats any more.
    const down = await until(async () => {
      const s = await getServer();
      return states(s).join() === 'stopped,stopped,stopped' && (await connectResult(agent)) === 'ECONNREFUSED' ? s : undefined;
    }, 10_000, 'the VMs stopped in CNAPI and cn-agent down', 25);
    expect(down.sysinfo['Boot Time']).toBe(bootTime);
    expect(down.transitional_status).toBe('rebooting');
    // vm-agent told VMAPI of the halt as the zones went down.
    await until(async () => (await vmapiState(vm.auto)) === 'stopped', 2000, 'VMAPI: auto stopped', 25);
    await new Promise((r) => setTimeout(r, 800));
    const stillDown = await getServer();
    expect(stillDown.sysinfo['Boot Time']).toBe(bootTime);
    expect(stillDown.last_heartbeat).toBe(down.last_heartbeat);
    expect(await connectResult(agent)).toBe('ECONNREFUSED');

    // Booted: a new Boot Time registered, heartbeats again, the reboot mark cleared, and
    // only the autoboot VM running again.
    const booted = await until(async () => {
      const s = await getServer();
      return s.sysinfo['Boot Time'] !== bootTime && s.last_heartbeat !== down.last_heartbeat && states(s)[0] === 'running' ? s : undefined;
    }, 20_000, 'the server booted');
    expect(Number(booted.sysinfo['Boot Time'])).toBeGreaterThan(Number(bootTime));
    expect(booted.last_boot).toBe(new Date(Number(booted.sysinfo['Boot Time']) * 1000).toISOString());
    expect(booted.status).toBe('running');
    expect(booted.transitional_status).toBeUndefined();
    expect(states(booted)).toEqual(['running', 'stopped', 'stopped']);
    expect(await connectResult(agent)).toBe('open');
    await until(async () => (await vmapiState(vm.auto)) === 'running', 10_000, 'VMAPI: auto running again');
    expect(await vmapiState(vm.manual)).toBe('stopped');
    // Its cn-agent takes tasks again.
    expect((await postTask(agent, booted.uuid, 'machine_load', { uuid: vm.auto })).body).toMatchObject({ state: 'running' });
  });
});
