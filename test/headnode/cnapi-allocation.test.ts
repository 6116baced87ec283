/**
 * The dev CNAPI's allocation and capacity routes, black box through sdc-clients' CNAPI client:
 * what sdc-cnapi lib/endpoints/allocations.js answers with DAPI (sdc-designation
 * lib/validations.js for the 500 InvalidParameters messages, lib/allocator.js and
 * lib/algorithms/ for steps, filters, tickets and the fixed overprovision ratios), and the
 * capacity DAPI adds to ServerGet (sdc-cnapi lib/endpoints/servers.js Server.get).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CnapiEnv } from './helpers/cnapi-env.js';
import { call, raw, rawError } from './helpers/sdc-clients.js';

type Obj = Record<string, any>;

const OWNER = '930896af-bf8c-48d4-885c-6573a94b1853';

function request(extra: Obj = {}): Obj {
  return {
    vm: { brand: 'joyent', owner_uuid: OWNER, ram: 128, vm_uuid: randomUUID() },
    image: {},
    package: { cpu_cap: 100 },
    nic_tag_requirements: [['external'], ['admin']],
    nic_tags: ['external', 'admin'],
    ...extra,
  };
}

describe('dev CNAPI allocation (POST /allocate, POST /capacity)', () => {
  const env = new CnapiEnv();
  let headnode: string;
  let cn: string;

  beforeAll(async () => {
    await env.start();
    headnode = await env.register({ headnode: true });
    cn = await env.register();
  });

  afterAll(async () => {
    await env.stop();
  });

  /** The 500 InvalidParameters body CNAPI sends for one field (allocations.js invalid()). */
  async function expectInvalid(body: Obj, field: string, message: string, path = '/allocate'): Promise<void> {
    const err = await rawError(env.client, 'post', path, body);
    expect(err.statusCode).toBe(500);
    expect(err.body).toEqual({
      code: 'InvalidParameters',
      message: 'Request parameters failed validation',
      errors: [{ field, code: 'Invalid', message }],
    });
  }

  it("refuses malformed requests with CNAPI's 500 InvalidParameters and DAPI's message for the field", async () => {
    const noImage = request();
    delete noImage.image;
    await expectInvalid(noImage, 'image', 'value is not an object. (was: [object Undefined])');
    const noTags = request();
    delete noTags.nic_tags;
    await expectInvalid(noTags, 'nic_tags', 'value was not an array');
    const noVmUuid = request();
    delete noVmUuid.vm.vm_uuid;
    await expectInvalid(noVmUuid, 'vm', '"vm.vm_uuid" is an invalid UUID');
    await expectInvalid(request({ vm: { ram: 128, vm_uuid: randomUUID() } }), 'vm', 'VM "owner_uuid" is not a valid UUID');
    await expectInvalid(request({ servers: [cn, 'foo'] }), 'servers', 'invalid server UUID');
    await expectInvalid(
      request({ nic_tag_requirements: ['external', 'admin'] }),
      'nic_tag_requirements',
      'property "0": external - string value found, but a array is required',
    );
    await expectInvalid(
      request({ nic_tag_requirements: [['external'], [5]] }),
      'nic_tag_requirements',
      'property "1[0]": 5 - number value found, but a string is required',
    );
    await expectInvalid(request({ nic_tags: ['external', 5] }), 'nic_tags', 'invalid nic_tag');
    await expectInvalid(request({ package: { alloc_server_spread: 'sideways' } }), 'package', '"alloc_server_spread" has invalid value');
    await expectInvalid({ servers: ['foo'] }, 'servers', 'invalid server UUID', '/capacity');
  });

  it("answers the server DAPI chose, with DAPI's steps and fixed overprovision ratios, and never the headnode", async () => {
    for (let i = 0; i < 5; i++) {
      const { body } = await raw<Obj>(env.client, 'post', '/allocate', request());
      expect(body.server.uuid).toBe(cn);
      expect(body.imgapiPeers).toEqual([]);
      expect(body.server.overprovision_ratios).toEqual({ cpu: 4, ram: 1, disk: 1 });
      expect(typeof body.server.unreserved_ram).toBe('number');
      expect(typeof body.server.score).toBe('number');
      expect(body.server).not.toHaveProperty('vms');
      const names = (body.steps as { step: string; remaining: string[] }[]).map((s) => s.step);
      expect(names[0]).toBe('Received by DAPI');
      // CNAPI gives DAPI no headnode to start with.
      expect(body.steps[0].remaining).toEqual([cn]);
      const order = [
        'Servers which have been setup',
        'Servers which are currently running',
        'Servers objects which are valid',
        'Servers supporting required NIC Tags',
        'Servers which are not headnodes',
        'Force overprovisioning to fixed values',
        'Load info about all VMs for each server',
        'Add VMs which have open provisioning tickets',
        'Calculate unreserved resources on each server',
        'Servers with enough unreserved RAM',
        'Score servers based on unreserved RAM',
        'Increase server scores randomly',
      ];
      expect(order.map((n) => names.indexOf(n))).toEqual([...order.map((n) => names.indexOf(n))].sort((a, b) => a - b));
      expect(order.every((n) => names.includes(n))).toBe(true);
    }
    const onlyHeadnode = await rawError(env.client, 'post', '/allocate', request({ servers: [headnode] }));
    expect(onlyHeadnode.statusCode).toBe(409);
    expect(onlyHeadnode.body).toEqual({
      code: 'NoAllocatableServersError',
      message: 'No compute resources available: received by DAPI',
    });
  });

  it('says which step left no server, in the NoAllocatableServersError message', async () => {
    const cases: [Obj, string][] = [
      [request({ nic_tag_requirements: [['no-such-tag']], nic_tags: ['no-such-tag'] }), 'no servers supporting required NIC Tags'],
      // Docker VMs never go to virtual servers, and mock CNs are virtual.
      [request({ vm: { ...request().vm, docker: true } }), 'no servers which are not virtual servers'],
      [request({ vm: { ...request().vm, internal_metadata: { force_designation_failure: true } } }), 'forced failure'],
      [request({ vm: { ...request().vm, ram: 1_000_000 } }), 'no servers with enough unreserved RAM'],
    ];
    for (const [body, reason] of cases) {
      const err = await rawError(env.client, 'post', '/allocate', body);
      expect(err.statusCode).toBe(409);
      expect(err.body).toEqual({ code: 'NoAllocatableServersError', message: `No compute resources available: ${reason}` });
    }
  });

  // sdc-cnapi allocations.js getOpenProvisioningTickets and sdc-designation calculate-ticketed-vms:
  // DAPI adds the VMs of open `vm`/`provision` waitlist tickets (VMAPI takes one per provision),
  // and only those: an allocation leaves nothing behind by itself.
  it('counts the VMs of open provision tickets, and nothing an allocation did not ticket', async () => {
    const small = await env.register({ memoryMiB: 4096 });
    // 4096 MiB less the 15% reservation leaves 3481 MiB: one 2 GiB VM fits, a second does not.
    const big = (): Obj => request({ servers: [small], vm: { ...request().vm, ram: 2048 } });
    const first = await raw<Obj>(env.client, 'post', '/allocate', big());
    expect(first.body.server.uuid).toBe(small);
    expect(first.body.server.unreserved_ram).toBe(3481);
    expect((await raw<Obj>(env.client, 'post', '/allocate', big())).body.server.uuid).toBe(small);

    const vmUuid = randomUUID();
    const ticket = await call<{ uuid: string }>(env.client, 'waitlistTicketCreate', small, {
      scope: 'vm', id: vmUuid, action: 'provision', expires_at: new Date(Date.now() + 60_000).toISOString(),
      extra: { owner_uuid: OWNER, max_physical_memory: 2048, cpu_cap: 100, quota: 10, brand: 'joyent' },
    });
    const ticketed = await rawError(env.client, 'post', '/allocate', big());
    expect(ticketed.statusCode).toBe(409);
    expect(ticketed.body?.message).toBe('No compute resources available: no servers with enough unreserved RAM');

    await call(env.client, 'waitlistTicketRelease', ticket.uuid);
    const released = await raw<Obj>(env.client, 'post', '/allocate', big());
    expect(released.body.server.uuid).toBe(small);
  });

  // sdc-designation lib/algorithms/calculate-affinity.js and shared/affinity.js: affinity rules
  // become locality hints, VMs named by alias found in VMAPI (as DAPI asks it through CNAPI).
  it('turns affinity rules into locality, looking instances up in VMAPI', async () => {
    const vm = randomUUID();
    const holder = randomUUID();
    await env.register({ uuid: holder });
    await raw(env.client, 'post', `/servers/${holder}/events/status`, CnapiEnv.status(65536, {
      [vm]: { owner_uuid: OWNER, max_physical_memory: 128, cpu_cap: 100, quota: 10, state: 'running', zone_state: 'running', brand: 'joyent' },
    }));
    const other = await env.register();
    const queries: string[] = [];
    const vmapi = http.createServer((req, res) => {
      queries.push(req.url ?? '');
      const pred = new URL(req.url ?? '/', 'http://x').searchParams.get('predicate') ?? '';
      const hit = pred.includes('"web0"') ? [{ uuid: vm, alias: 'web0' }] : [];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(hit));
    });
    await new Promise<void>((r) => vmapi.listen(0, '127.0.0.1', () => r()));
    env.cnapi.setPeers({ vmapi: `http://127.0.0.1:${(vmapi.address() as AddressInfo).port}` });
    try {
      const withAffinity = (rule: Obj) => request({ servers: [holder, other], vm: { ...request().vm, affinity: [rule] } });
      const near = await raw<Obj>(env.client, 'post', '/allocate',
        withAffinity({ key: 'instance', operator: '==', value: 'web0', isSoft: false, valueType: 'exact' }));
      expect(near.body.server.uuid).toBe(holder);
      expect(queries.some((q) => q.startsWith('/vms?') && q.includes(`owner_uuid=${OWNER}`))).toBe(true);
      const far = await raw<Obj>(env.client, 'post', '/allocate',
        withAffinity({ key: 'instance', operator: '!=', value: vm, isSoft: false, valueType: 'exact' }));
      expect(far.body.server.uuid).toBe(other);
      const none = await rawError(env.client, 'post', '/allocate',
        withAffinity({ key: 'instance', operator: '==', value: 'db9', isSoft: false, valueType: 'exact' }));
      expect(none.statusCode).toBe(409);
      expect(none.body?.message).toBe(
        'No compute resources available: no active containers found matching "db9" for affinity "instance==db9"',
      );
    } finally {
      env.cnapi.setPeers({});
      await new Promise<void>((r) => vmapi.close(() => r()));
    }
  });

  it("reports spare capacity per setup server (the headnode's too) in DAPI's units", async () => {
    const { body } = await raw<{ capacities: Record<string, Obj> }>(env.client, 'post', '/capacity', {});
    expect(Object.keys(body.capacities)).toEqual(expect.arrayContaining([headnode, cn]));
    const c = body.capacities[cn]!;
    expect(Object.keys(c).sort()).toEqual(['cpu', 'disk', 'ram']);
    expect(c.cpu).toBe(1600);
    expect(c.ram).toBe(Math.floor(65536 * 0.85));
    const one = await raw<{ capacities: Record<string, Obj> }>(env.client, 'post', '/capacity', { servers: [headnode] });
    expect(Object.keys(one.body.capacities)).toEqual([headnode]);
  });

  it("shows DAPI's overprovision ratios on a server, whatever ServerUpdate was given", async () => {
    await call(env.client, 'updateServer', cn, { overprovision_ratios: { ram: 2 } });
    const s = await call<Obj>(env.client, 'getServer', cn);
    expect(s.overprovision_ratios).toEqual({ cpu: 4, ram: 1, disk: 1 });
    expect(s.score).toBe(0);
    const listed = await call<Obj[]>(env.client, 'listServers', { uuids: cn, extras: 'capacity' });
    expect(listed[0]!.overprovision_ratios).toEqual({ cpu: 4, ram: 1, disk: 1 });
    expect(listed[0]).not.toHaveProperty('vms');
    expect(listed[0]).not.toHaveProperty('sysinfo');
  });
});
