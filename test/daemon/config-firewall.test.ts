/**
 * The daemon with config-agent and firewaller on its CNs and the embedded dev headnode (SAPI,
 * FWAPI), seen from the outside: each CN's agents' config files appear under its server dir
 * and GET /servers (list-servers) gives their age; the metrics count the files written; a rule
 * created with sdc-clients' FWAPI client reaches the store of the CN hosting the VM it applies
 * to, shows in the control API's fwadm view and in command_execute's `fwadm` (CNAPI execute with
 * --allow-execute), and nowhere else.
 */
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { resolveConfig, type DaemonConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { defaultPlugins } from '../../src/daemon/default-plugins.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { call, cnapiClient, type Client } from '../headnode/helpers/sdc-clients.js';
import { createServers } from './helpers/control.js';
import { waitFor } from './helpers/fakes.js';

const require = createRequire(import.meta.url);
const { FWAPI } = require('sdc-clients') as { FWAPI: new (o: object) => Client };
const log = createQuietLogger('config-firewall-test');
const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';
type Obj = Record<string, any>;

function plugins(config: DaemonConfig) {
  return defaultPlugins(config, {
    vmAgent: { startSpreadMs: 0 },
    configAgent: { pollIntervalMs: 1000, startSpreadMs: 0, tickMs: 50 },
    firewaller: { startSpreadMs: 0, tickMs: 50 },
  });
}

describe('daemon with config-agent and firewaller', () => {
  let dir: string;
  let daemon: Daemon;
  let fwapi: Client;
  let cnapi: Client;
  let a: string;
  let b: string;

  async function control(pathname: string): Promise<{ status: number; text: string }> {
    const res = await fetch(`${daemon.controlAddress.url}${pathname}`);
    return { status: res.status, text: await res.text() };
  }

  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-config-fw-'));
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ timings: { startSpreadMs: 50 } }));
    const config = await resolveConfig({ flags: { dataDir: dir, cmonPort: 0, allowExecute: 'true' }, env: {}, mdata: noMdata });
    daemon = new Daemon({ config, log, plugins: plugins(config), embeddedHeadnode: {}, sapiInstances: { settleMs: 50 } });
    await daemon.start();
    [a, b] = (await createServers(daemon, { count: 2 })) as [string, string];
    fwapi = new FWAPI({ url: daemon.config.urls.fwapi, log, agent: false });
    cnapi = cnapiClient(daemon.config.urls.cnapi!);
  });

  afterAll(async () => {
    fwapi?.close();
    cnapi?.close();
    await daemon?.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("writes each CN's agent config files from SAPI, and list-servers and the metrics show it", async () => {
    const file = (uuid: string): string => path.join(dir, 'servers', uuid, 'config/opt/smartdc/agents/etc/vm-agent.config.json');
    for (const uuid of [a, b]) await waitFor(() => fsp.stat(file(uuid)).then(() => true, () => false), 15_000, `config of ${uuid}`);
    expect(JSON.parse(await fsp.readFile(file(a), 'utf8'))).toEqual({ vmapi: { url: `http://vmapi.${daemon.config.datacenterName}.local` }, no_rabbit: true });
    // A file is on disk before the check that wrote it ends: the check also fetches the CN's
    // other instances, and some may not be adopted by SAPI yet. list-servers gives an age once
    // a whole check has succeeded, and "-" (null) until then.
    const rowOf = async (uuid: string): Promise<Obj> => (JSON.parse((await control('/servers')).text) as Obj[]).find((r) => r.uuid === uuid)!;
    for (const uuid of [a, b]) await waitFor(async () => typeof (await rowOf(uuid)).configAgeSeconds === 'number', 15_000, `config age of ${uuid}`);
    const row = await rowOf(a);
    expect(row.configAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(row.configAgeSeconds).toBeLessThan(15);
    expect(row.configStale).toBe(false);
    const metrics = (await control('/metrics')).text;
    const written = /mockcloud_config_agent_events_total\{[^}]*event="file_written"[^}]*\} (\d+)/.exec(metrics);
    expect(Number(written?.[1])).toBeGreaterThanOrEqual(8);
  });

  it("a rule from FWAPI reaches the CN hosting its VM: the fwadm view, command_execute's fwadm, and not the other CN", async () => {
    const vmUuid = newUuid();
    await daemon.fleet.get(a)!.vms.create({
      uuid: vmUuid, brand: 'joyent-minimal', alias: 'fw', owner_uuid: OWNER, image_uuid: newUuid(), max_physical_memory: 256, quota: 10,
      autoboot: true, firewall_enabled: true, tags: { role: 'web' },
      nics: [{ mac: '90:b8:d0:aa:bb:01', ip: '10.88.88.50', netmask: '255.255.255.0', nic_tag: 'external', primary: true, interface: 'net0' }],
    });
    await waitFor(() => daemon.headnode!.vmapi.stats().vms >= 1, 10_000, 'VM in VMAPI');
    const rule = (await call<Obj>(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM any TO tag "role" = "web" ALLOW tcp PORT 80' })) as Obj;
    await waitFor(async () => (await control(`/servers/${a}/fwadm?cmd=list`)).text.includes(rule.uuid), 15_000, 'rule on a');
    expect((await control(`/servers/${a}/fwadm?cmd=vms%20${rule.uuid}`)).text).toBe(`${vmUuid}\n`);
    const onB = JSON.parse((await control(`/servers/${b}/firewall`)).text) as Obj;
    expect(onB.rules).toEqual([]);
    const out = await call<string>(cnapi, 'commandExecute', a, `#!/bin/sh\nfwadm list\nfwadm rules ${vmUuid}\nfwadm status ${vmUuid}\n`, {});
    const lines = out.split('\n');
    expect(lines[0]).toMatch(/^UUID +ENABLED RULE$/);
    expect(lines[1]).toBe(`${rule.uuid} true    FROM any TO tag "role" = "web" ALLOW tcp PORT 80`);
    expect(lines[3]).toContain(rule.uuid);
    expect(lines[4]).toBe('running');
    const metrics = (await control('/metrics')).text;
    expect(Number(/mockcloud_firewall_rules\{[^}]*\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    expect(metrics).toMatch(/mockcloud_firewaller_stream_connected\{[^}]*\} 1/);
  });
});
