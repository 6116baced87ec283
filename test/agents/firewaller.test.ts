/**
 * firewaller on mock CNs against the dev FWAPI and VMAPI, driven with sdc-clients' FWAPI
 * client: a rule created in FWAPI reaches, over FWAPI's update stream (node-fast), the stores
 * of exactly the CNs hosting a VM it applies to whose firewall is enabled (fwadm's matching,
 * sdc-firewaller-agent tasks/add-rule.js), with the remote VMs of its other side from VMAPI;
 * deleting it removes it; a local VM's firewall turned on (vm.update, as VMAPI's fwapi.update
 * step posts it) resolves its rules; a rule that does not parse is skipped; a store corrupted on
 * disk is rebuilt from FWAPI at the next start; an FWAPI answering 503 is retried with the
 * agent's backoff (100 ms doubling, 5 retries); the update stream's listener closes a client
 * whose frame is over its 64 KiB, and drops one that leaves 8 MiB of updates unread, while the
 * firewallers keep their stream.
 */
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallerPlugin } from '../../src/agents/firewaller/index.js';
import { VmAgentPlugin } from '../../src/agents/vm-agent/index.js';
import { encodeFast, fastData, FP_HEADER_SZ, FP_STATUS_DATA, FP_TYPE_JSON, FP_VERSION } from '../../src/common/fast/protocol.js';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { Headnode, type HeadnodeUrls } from '../../src/headnode/headnode.js';
import type { MockCnImpl } from '../../src/mockcn/mock-cn.js';
import { call, callError, type Client } from '../headnode/helpers/sdc-clients.js';
import { makeContext, TestFleet, vmPayload, waitFor, type TestContext } from './helpers/fleet.js';
import { RecordingProxy } from './helpers/recording-proxy.js';

const require = createRequire(import.meta.url);
const { FWAPI } = require('sdc-clients') as { FWAPI: new (o: object) => Client };

type Obj = Record<string, any>;
const OWNER = '2f9d8cb7-1b77-4b55-a5a0-1fc8e6f8c6a1';
const OTHER = '5b0e1d0c-7d3e-4d4e-9c9a-2a4a0f0e7c11';

describe('firewaller on every mock CN', () => {
  const log = createQuietLogger('firewaller-test');
  let fleet: TestFleet;
  let hn: Headnode;
  let urls: HeadnodeUrls;
  let tc: TestContext;
  let fw: FirewallerPlugin;
  let vmAgent: VmAgentPlugin;
  let fwapi: Client;
  const cn: Record<'a' | 'b' | 'c' | 'd', MockCnImpl> = {} as never;
  const vm: Record<string, string> = {};

  async function addVm(on: MockCnImpl, name: string, ip: string, tags: Obj, firewall: boolean, owner = OWNER): Promise<void> {
    vm[name] = newUuid();
    await on.vms.create(vmPayload({
      uuid: vm[name], owner_uuid: owner, alias: name, tags, firewall_enabled: firewall,
      nics: [{ mac: `90:b8:d0:00:00:${String(Object.keys(vm).length).padStart(2, '0')}`, ip, netmask: '255.255.255.0', nic_tag: 'external', primary: true, interface: 'net0' }],
    }));
  }

  const stored = (c: MockCnImpl): Obj => fw.state(c.uuid)!;
  const hasRule = (c: MockCnImpl, uuid: string): boolean => stored(c).rules.some((r: Obj) => r.uuid === uuid);

  beforeAll(async () => {
    fleet = await TestFleet.create();
    hn = new Headnode({ dataDir: fleet.dataDir, log, fwapiPollMs: 50 });
    urls = await hn.start();
    fwapi = new FWAPI({ url: urls.fwapi, log, agent: false });
    for (const k of ['a', 'b', 'c', 'd'] as const) cn[k] = await fleet.addCn();
    await addVm(cn.a, 'web1', '10.88.0.11', { role: 'web' }, true);
    await addVm(cn.b, 'web2', '10.88.0.12', { role: 'web' }, true);
    await addVm(cn.c, 'db1', '10.88.0.21', { role: 'db' }, true);
    await addVm(cn.d, 'web3', '10.88.0.13', { role: 'web' }, false);
    await addVm(cn.d, 'other', '10.88.0.31', { role: 'web' }, true, OTHER);
    tc = makeContext(fleet, { vmapi: urls.vmapi, fwapi: urls.fwapi, fwapiFast: urls.fwapiFast });
    // The VMs in VMAPI (remote VMs come from there), as vm-agent puts them.
    vmAgent = new VmAgentPlugin(tc.ctx, { startSpreadMs: 0 });
    vmAgent.start();
    for (const c of fleet.list()) vmAgent.attach(c);
    await waitFor('VMs in VMAPI', () => hn.vmapi.stats().vms >= 5);
    fw = new FirewallerPlugin(tc.ctx, { startSpreadMs: 0, tickMs: 25 });
    fw.start();
    for (const c of fleet.list()) fw.attach(c);
    await waitFor('first syncs', () => fw.stats().syncs >= 4);
    await waitFor('update stream', () => fw.stats().streamConnected === 1);
  });

  afterAll(async () => {
    await fw?.stop();
    vmAgent?.stop();
    tc?.close();
    fwapi?.close();
    await hn?.stop();
    await fleet?.close();
  });

  it('a rule created in FWAPI reaches the stores of the CNs hosting the VMs it applies to, and no other; deleting it removes it', async () => {
    const rule = (await call<Obj>(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM any TO tag "role" = "web" ALLOW tcp PORT 80' })) as Obj;
    await waitFor('rule on a and b', () => hasRule(cn.a, rule.uuid) && hasRule(cn.b, rule.uuid));
    await Promise.all(fleet.list().map((c) => fw.settled(c.uuid)));
    // c hosts no web VM; d's web VM has its firewall off and its other VM belongs to someone else.
    expect(hasRule(cn.c, rule.uuid)).toBe(false);
    expect(hasRule(cn.d, rule.uuid)).toBe(false);
    expect(stored(cn.a).rules.find((r: Obj) => r.uuid === rule.uuid)).toEqual({ ...rule, created_by: 'fwapi' });
    // What fwadm prints there.
    expect(fw.fwadm(cn.a.uuid, ['vms', rule.uuid])!.stdout).toBe(`${vm.web1}\n`);
    expect(fw.fwadm(cn.a.uuid, ['list'])!.stdout).toContain(`${rule.uuid} true    FROM any TO tag "role" = "web" ALLOW tcp PORT 80`);
    expect(fw.fwadm(cn.a.uuid, ['status', vm.web1!])!.stdout).toBe('running\n');
    expect(fw.fwadm(cn.d.uuid, ['status', vm.web3!])!.stdout).toBe('stopped\n');
    // On disk, durably.
    const onDisk = JSON.parse(await fsp.readFile(path.join(cn.a.paths.dir, 'fw/state.json'), 'utf8')) as Obj;
    expect(onDisk.rules.map((r: Obj) => r.uuid)).toContain(rule.uuid);

    await call(fwapi, 'deleteRule', rule.uuid, {});
    await waitFor('rule gone from a and b', () => !hasRule(cn.a, rule.uuid) && !hasRule(cn.b, rule.uuid));
  });

  it("a rule between tags brings the other side's VMs from VMAPI as remote VMs", async () => {
    const rule = (await call<Obj>(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM tag "role" = "web" TO tag "role" = "db" ALLOW tcp PORT 5432' })) as Obj;
    await waitFor('rule on a, b and c', () => hasRule(cn.a, rule.uuid) && hasRule(cn.b, rule.uuid) && hasRule(cn.c, rule.uuid));
    await waitFor('db1 a remote VM on a', () => stored(cn.a).rvms.some((v: Obj) => v.uuid === vm.db1));
    expect(stored(cn.a).rvms.find((v: Obj) => v.uuid === vm.db1)).toEqual({ uuid: vm.db1, ips: ['10.88.0.21'], owner_uuid: OWNER, tags: { role: 'db' } });
    // c holds the web VMs of this owner on other CNs (web3's firewall is off, but it is a target all the same).
    await waitFor('web VMs remote on c', () => [vm.web1, vm.web2].every((u) => stored(cn.c).rvms.some((v: Obj) => v.uuid === u)));
    expect(stored(cn.c).rvms.some((v: Obj) => v.uuid === vm.other)).toBe(false);
    await call(fwapi, 'deleteRule', rule.uuid, {});
    await waitFor('gone', () => !hasRule(cn.c, rule.uuid));
  });

  it("a VM whose firewall is turned on gets its rules (vm.update, as VMAPI's workflow posts it)", async () => {
    const rule = (await call<Obj>(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM any TO tag "role" = "web" ALLOW tcp PORT 443' })) as Obj;
    await waitFor('rule on a', () => hasRule(cn.a, rule.uuid));
    await fw.settled(cn.d.uuid);
    expect(hasRule(cn.d, rule.uuid)).toBe(false);
    await cn.d.vms.update(vm.web3!, { firewall_enabled: true });
    await call(fwapi, 'createUpdate', { type: 'vm.update', uuid: vm.web3, owner_uuid: OWNER, server_uuid: cn.d.uuid, firewall_enabled: true });
    await waitFor('rule on d', () => hasRule(cn.d, rule.uuid));
    expect(fw.fwadm(cn.d.uuid, ['rules', vm.web3!])!.stdout).toContain(rule.uuid);
    await call(fwapi, 'deleteRule', rule.uuid, {});
  });

  it('FWAPI refuses a rule fwrule does not parse with its 422 body; one that reaches a firewaller anyway is logged and skipped', async () => {
    const err = await callError(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM tag foo TO subnet 10.8.0.0/24 ALLOW udp port 0' });
    expect(err.statusCode).toBe(422);
    expect(err.body).toEqual({ code: 'InvalidParameters', message: 'Invalid parameters', errors: [{ field: 'rule', code: 'InvalidParameter', message: 'Port number "0" is invalid' }] });
    const bad = fw.stats().badRules;
    // As if FWAPI had sent it (an older FWAPI, another parser version).
    (hn.fwapi as unknown as { updates: { queueUpdate(n: string, v: unknown): string } }).updates.queueUpdate('fw.add_rule', {
      uuid: newUuid(), owner_uuid: OWNER, enabled: true, rule: 'FROM all vms TO tag "role" = "web" ALLOW tcp PORT 99999',
    });
    await waitFor('bad rule skipped on every CN', () => fw.stats().badRules >= bad + 4);
    expect(fw.stats().taskFailures).toBe(0);
  });

  it('a store corrupted on disk is set aside and rebuilt from FWAPI when the CN starts again', async () => {
    const rule = (await call<Obj>(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM any TO vm ' + vm.web1 + ' ALLOW tcp PORT 22' })) as Obj;
    await waitFor('rule on a', () => hasRule(cn.a, rule.uuid));
    await fw.settled(cn.a.uuid);
    fw.detach(cn.a.uuid);
    await fsp.writeFile(path.join(cn.a.paths.dir, 'fw/state.json'), '{"version":1,"rules":[{"uuid');
    const rebuilt = fw.stats().storesRebuilt;
    fw.attach(cn.a);
    await waitFor('rebuilt with the rule', () => fw.stats().storesRebuilt === rebuilt + 1 && hasRule(cn.a, rule.uuid));
    const files = await fsp.readdir(path.join(cn.a.paths.dir, 'fw'));
    expect(files.some((f) => f.startsWith('state.json.corrupt-'))).toBe(true);
  });

  it('a CN that is down misses updates and syncs them when it comes back up', async () => {
    await cn.b.setPower('down', { graceful: true });
    fw.powerChanged(cn.b);
    const rule = (await call<Obj>(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM any TO tag "role" = "web" ALLOW tcp PORT 8080' })) as Obj;
    await waitFor('rule on a', () => hasRule(cn.a, rule.uuid));
    await fw.settled(cn.b.uuid);
    expect(hasRule(cn.b, rule.uuid)).toBe(false);
    await cn.b.setPower('up');
    fw.powerChanged(cn.b);
    await waitFor('rule on b after its start-up sync', () => hasRule(cn.b, rule.uuid));
  });

  /** A firewaller of its own whose FWAPI requests go through a recording proxy; `close` stops all three. */
  async function proxiedFirewaller(): Promise<{ proxy: RecordingProxy; tc: TestContext; fw: FirewallerPlugin; close: () => Promise<void> }> {
    const proxy = new RecordingProxy(urls.fwapi);
    await proxy.start();
    const ptc = makeContext(fleet, { vmapi: urls.vmapi, fwapi: proxy.url, fwapiFast: urls.fwapiFast });
    const pfw = new FirewallerPlugin(ptc.ctx, { startSpreadMs: 0, tickMs: 25 });
    return {
      proxy, tc: ptc, fw: pfw,
      close: async () => {
        await pfw.stop();
        ptc.close();
        await proxy.stop();
      },
    };
  }

  it("an FWAPI answering 503 is asked again with the agent's backoff: 100 ms doubling, 5 retries", async () => {
    const { proxy, tc: tc2, fw: fw2, close } = await proxiedFirewaller();
    try {
      proxy.down = true;
      fw2.start();
      fw2.attach(cn.b);
      await waitFor('sync given up', () => fw2.stats().syncFailures === 1, 15_000);
      const tries = proxy.records.filter((r) => r.path === '/resolve');
      expect(tries).toHaveLength(6);
      const gaps = tries.slice(1).map((r, i) => r.at - tries[i]!.at);
      // 100, 200, 400, 800, 1600 ms (the scheduler may be late, never early).
      [100, 200, 400, 800, 1600].forEach((min, i) => expect(gaps[i]).toBeGreaterThanOrEqual(min - 5));
      expect(tc2.errors['firewaller.sync']).toBe(1);
    } finally {
      await close();
    }
  });

  it("a CN removed while its sync is in flight: once the detach has settled, nothing more is written into the CN's dir", async () => {
    const { proxy, fw: late, close } = await proxiedFirewaller();
    try {
      const c = await fleet.addCn();
      await addVm(c, 'late1', '10.88.0.41', { role: 'web' }, true);
      let release!: () => void;
      proxy.hold = new Promise<void>((r) => (release = r));
      late.start();
      late.attach(c);
      await waitFor('its first sync in flight', () => proxy.records.some((r) => r.path === '/resolve'));
      // The daemon's removal: detach, wait for what it returns, then the CN's files go (the
      // firewaller's dir here: the CN's own dir stays, so a late save would show).
      const settled = late.detach(c.uuid);
      release();
      await settled;
      const fwDir = path.join(c.paths.dir, 'fw');
      await fsp.rm(fwDir, { recursive: true, force: true });
      // FWAPI's answers have reached the firewaller: anything it would still save is saved by now.
      await waitFor('the answers forwarded', () => proxy.records.filter((r) => r.path === '/resolve').every((r) => r.status !== undefined));
      await new Promise((r) => setTimeout(r, 300));
      expect(await fsp.readdir(fwDir).catch(() => 'absent')).toBe('absent');
    } finally {
      await close();
    }
  });

  it("FWAPI's update stream closes a client announcing a frame over 64 KiB, drops one that leaves 8 MiB unread, and keeps the firewallers'", async () => {
    const fast = new URL(urls.fwapiFast);
    const connect = async (): Promise<net.Socket> => {
      const s = net.connect(Number(fast.port), fast.hostname);
      s.on('error', () => undefined);
      await new Promise((r) => s.once('connect', r));
      return s;
    };
    const closed = (s: net.Socket): Promise<void> => new Promise((r) => (s.destroyed ? r() : s.once('close', () => r())));

    // A header announcing 1 MiB of JSON: closed on the header, before any of it is sent.
    const big = await connect();
    const header = Buffer.alloc(FP_HEADER_SZ);
    header.writeUInt8(FP_VERSION, 0);
    header.writeUInt8(FP_TYPE_JSON, 1);
    header.writeUInt8(FP_STATUS_DATA, 2);
    header.writeUInt32BE(1, 3);
    header.writeUInt32BE(0, 7);
    header.writeUInt32BE(1024 * 1024, 11);
    big.write(header);
    await waitFor('the oversized frame closed', () => big.destroyed || big.readableEnded, 5000);
    big.destroy();

    // A subscriber that never reads: dropped once 8 MiB of updates wait for it.
    const agents = async (): Promise<string[]> => ((await (await fetch(`${urls.fwapi}/ping?agents=true`)).json()) as Obj).agents.connected;
    const slow = await connect();
    slow.write(encodeFast({ status: FP_STATUS_DATA, msgid: 1, data: fastData('messages', [{ client_id: 'never-reads', version: 1 }]) }));
    await waitFor('the slow client subscribed', async () => (await agents()).includes('never-reads'));
    slow.pause();
    const padding = 'x'.repeat(6 * 1024 * 1024);
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${urls.fwapi}/updates`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'vm.delete', uuid: newUuid(), padding }),
      });
      expect(res.status).toBe(202);
    }
    await waitFor('the slow client dropped', async () => !(await agents()).includes('never-reads'), 15_000);
    slow.destroy();
    await closed(slow);

    // The firewallers' stream went on through both: a new rule still reaches them.
    expect(fw.stats().streamConnected).toBe(1);
    const rule = (await call<Obj>(fwapi, 'createRule', { owner_uuid: OWNER, enabled: true, rule: 'FROM any TO tag "role" = "web" ALLOW tcp PORT 8443' })) as Obj;
    await waitFor('the rule on a', () => hasRule(cn.a, rule.uuid));
    await call(fwapi, 'deleteRule', rule.uuid, {});
  });
});
