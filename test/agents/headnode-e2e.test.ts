/**
 * vm-agent and net-agent together against the embedded dev headnode (src/headnode: VMAPI, NAPI),
 * checked with the real Triton clients (sdc-clients VMAPI and NAPI): every change of a mock
 * CN's VM shows in VMAPI and NAPI within seconds, a VMAPI restarted empty is refilled, and a
 * NAPI network change reaches the VM's file.
 */
import { promises as fsp } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NetAgentPlugin } from '../../src/agents/net-agent/index.js';
import { VmAgentPlugin } from '../../src/agents/vm-agent/index.js';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { Headnode, type HeadnodeUrls } from '../../src/headnode/headnode.js';
import { randomMockMac } from '../../src/mockcn/sysinfo-template.js';
import { makeContext, TestFleet, vmPayload, waitFor, type TestContext } from './helpers/fleet.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const sdc = require('sdc-clients') as { VMAPI: any; NAPI: any };

type Obj = Record<string, any>;
const OWNER = '2f9d8cb7-1b77-4b55-a5a0-1fc8e6f8c6a1';

/** A callback-style sdc-clients call; resolves undefined on 404. */
function call(client: any, method: string, ...args: unknown[]): Promise<any> {
  return new Promise((resolve, reject) => {
    client[method](...args, (err: { statusCode?: number } | null, result: unknown) => {
      if (err?.statusCode === 404) resolve(undefined);
      else if (err) reject(err);
      else resolve(result);
    });
  });
}

describe('vm-agent and net-agent against the dev headnode', () => {
  let fleet: TestFleet;
  let hn: Headnode;
  let urls: HeadnodeUrls;
  let tc: TestContext;
  let vmAgent: VmAgentPlugin | undefined;
  let netAgent: NetAgentPlugin | undefined;
  const log = createQuietLogger('e2e');

  beforeEach(async () => {
    fleet = await TestFleet.create();
    hn = new Headnode({ dataDir: fleet.dataDir, log });
    urls = await hn.start();
  });

  afterEach(async () => {
    vmAgent?.stop();
    netAgent?.stop();
    vmAgent = netAgent = undefined;
    tc?.close();
    await hn.stop();
    await fleet.close();
  });

  it('reflects create, stop, add NIC, gateway change, VMAPI data loss and destroy', async (t) => {
    if (!urls.vmapi) t.skip();
    const vmapi = new sdc.VMAPI({ url: urls.vmapi, log, agent: false });
    const napi = new sdc.NAPI({ url: urls.napi, log, agent: false });

    // A CN the way create-server makes one: its admin NIC allocated in NAPI first.
    const adminMac = randomMockMac();
    const adminNic = await call(napi, 'provisionNic', 'admin', { belongs_to_type: 'other', belongs_to_uuid: DEFAULT_ADMIN_UUID, owner_uuid: DEFAULT_ADMIN_UUID, mac: adminMac, nic_tags_provided: ['admin'] });
    const cn = await fleet.addCn({ adminMac, adminIp: adminNic.ip });

    tc = makeContext(fleet, { vmapi: urls.vmapi, napi: urls.napi });
    vmAgent = new VmAgentPlugin(tc.ctx, { startSpreadMs: 0, retryMinMs: 50, retryMaxMs: 500, resyncIntervalMs: 300 });
    netAgent = new NetAgentPlugin(tc.ctx, { startSpreadMs: 0, retryMinMs: 50, retryMaxMs: 500, changefeedBackoffMinMs: 100, changefeedBackoffMaxMs: 500 });
    vmAgent.start();
    await netAgent.start();
    vmAgent.attach(cn);
    netAgent.attach(cn);

    await waitFor('admin NIC claimed for the CN', async () => (await call(napi, 'getNic', adminMac))?.belongs_to_uuid === cn.uuid);

    // Provision the way VMAPI's workflow does: NAPI NIC first, then the VM on the CN.
    const nets = (await call(napi, 'listNetworks', { name: 'external' })) as Obj[];
    const external = nets[0]!;
    const uuid = newUuid();
    const n = await call(napi, 'provisionNic', external.uuid, { belongs_to_type: 'zone', belongs_to_uuid: uuid, owner_uuid: OWNER, state: 'provisioning' });
    await cn.vms.create(
      vmPayload({
        uuid,
        owner_uuid: OWNER,
        alias: 'e2e',
        resolvers: n.resolvers,
        nics: [{ mac: n.mac, ip: n.ip, netmask: n.netmask, gateway: n.gateway, nic_tag: n.nic_tag, vlan_id: n.vlan_id, network_uuid: n.network_uuid, primary: true, interface: 'net0' }],
      }),
    );
    const created = await waitFor('VM in VMAPI', async () => {
      const v = await call(vmapi, 'getVm', { uuid });
      return v?.state === 'running' ? v : undefined;
    });
    expect(created).toMatchObject({ server_uuid: cn.uuid, alias: 'e2e', owner_uuid: OWNER });
    await waitFor('NIC running in NAPI', async () => (await call(napi, 'getNic', n.mac))?.state === 'running');

    await cn.vms.stop(uuid);
    await waitFor('stopped in VMAPI', async () => (await call(vmapi, 'getVm', { uuid }))?.state === 'stopped');
    await waitFor('stopped in NAPI', async () => (await call(napi, 'getNic', n.mac))?.state === 'stopped');
    await cn.vms.start(uuid);

    const added = '90:b8:d0:e2:e0:01';
    await cn.vms.update(uuid, { add_nics: [{ mac: added, nic_tag: 'external', interface: 'net1' }] });
    await waitFor('added NIC in VMAPI', async () => ((await call(vmapi, 'getVm', { uuid }))?.nics ?? []).some((x: Obj) => x.mac === added));
    await waitFor('added NIC in NAPI', async () => (await call(napi, 'getNic', added))?.belongs_to_uuid === uuid);

    await call(napi, 'updateNetwork', external.uuid, { gateway: '10.88.88.1' });
    await waitFor('gateway in the VM file', async () => {
      const f = JSON.parse(await fsp.readFile(path.join(cn.paths.vms, `${uuid}.json`), 'utf8'));
      return f.nics.find((x: Obj) => x.mac === n.mac)?.gateway === '10.88.88.1';
    });

    // VMAPI loses its data: same address, empty database.
    const ports = Object.fromEntries(Object.entries(urls).map(([k, u]) => [k, Number(new URL(u).port)]));
    await hn.stop();
    await fsp.rm(path.join(fleet.dataDir, 'headnode', 'vmapi-vms.json'), { force: true });
    hn = new Headnode({ dataDir: fleet.dataDir, log, ports });
    await hn.start();
    const vmapi2 = new sdc.VMAPI({ url: urls.vmapi, log, agent: false });
    await waitFor('VMAPI refilled by the re-sync', async () => (await call(vmapi2, 'getVm', { uuid }))?.state === 'running', 15_000);

    await cn.vms.delete(uuid);
    await waitFor('destroyed in VMAPI', async () => (await call(vmapi2, 'getVm', { uuid }))?.state === 'destroyed');
    await waitFor('NICs released in NAPI', async () => (await call(napi, 'getNic', n.mac)) === undefined && (await call(napi, 'getNic', added)) === undefined);
  });
});
