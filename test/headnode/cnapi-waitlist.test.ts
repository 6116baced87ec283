/**
 * The dev CNAPI's waitlist tickets, black box: sdc-cnapi lib/endpoints/waitlist.js and
 * lib/models/waitlist.js (one active ticket per server, scope and id; the oldest queued one
 * activates when it is released, deleted or expires; waiters wake then).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CnapiEnv } from './helpers/cnapi-env.js';
import { raw, rawError } from './helpers/sdc-clients.js';

type Obj = Record<string, any>;

const inSeconds = (s: number): string => new Date(Date.now() + s * 1000).toISOString();

describe('dev CNAPI waitlist', () => {
  const env = new CnapiEnv();
  let cn: string;

  beforeAll(async () => {
    await env.start();
    cn = await env.register();
  });

  afterAll(async () => {
    await env.stop();
  });

  const create = (id: string, expiresIn = 60, extra: Obj = {}) =>
    raw<{ uuid: string; queue: Obj[] }>(env.client, 'post', `/servers/${cn}/tickets`, {
      scope: 'vm',
      id,
      expires_at: inSeconds(expiresIn),
      action: 'provision',
      extra,
    });

  it('queues tickets per scope and id: the first is active, the next waits for its release', async () => {
    const vm = randomUUID();
    const a = await create(vm);
    expect(a.statusCode).toBe(202);
    expect(a.body.queue.map((t) => [t.uuid, t.status])).toEqual([[a.body.uuid, 'active']]);
    const b = await create(vm);
    expect(b.body.queue.map((t) => [t.uuid, t.status])).toEqual([
      [a.body.uuid, 'active'],
      [b.body.uuid, 'queued'],
    ]);
    const other = await create(randomUUID());
    expect(other.body.queue[0]!.status).toBe('active');

    const ticket = (await raw<Obj>(env.client, 'get', `/tickets/${b.body.uuid}`)).body;
    expect(ticket).toMatchObject({ uuid: b.body.uuid, server_uuid: cn, scope: 'vm', id: vm, action: 'provision', status: 'queued', extra: {} });

    let woke = false;
    const waiting = raw(env.client, 'get', `/tickets/${b.body.uuid}/wait`).then((r) => {
      woke = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(woke).toBe(false);
    expect((await raw(env.client, 'put', `/tickets/${a.body.uuid}/release`)).statusCode).toBe(204);
    expect((await waiting).statusCode).toBe(204);
    expect((await raw<Obj>(env.client, 'get', `/tickets/${a.body.uuid}`)).body.status).toBe('finished');
    expect((await raw<Obj>(env.client, 'get', `/tickets/${b.body.uuid}`)).body.status).toBe('active');
    // Waiting on an active ticket returns at once.
    expect((await raw(env.client, 'get', `/tickets/${b.body.uuid}/wait`)).statusCode).toBe(204);

    const listed = (await raw<Obj[]>(env.client, 'get', `/servers/${cn}/tickets`)).body;
    expect(listed.map((t) => t.uuid)).toEqual([a.body.uuid, b.body.uuid, other.body.uuid]);
    const page = (await raw<Obj[]>(env.client, 'get', `/servers/${cn}/tickets?limit=1&offset=1`)).body;
    expect(page.map((t) => t.uuid)).toEqual([b.body.uuid]);
  });

  it('expires a ticket past its expires_at, wakes its waiters with the error and activates the next', async () => {
    const vm = randomUUID();
    const a = await create(vm, 1);
    const b = await create(vm, 60);
    const waitB = raw(env.client, 'get', `/tickets/${b.body.uuid}/wait`);
    expect((await waitB).statusCode).toBe(204);
    expect((await raw<Obj>(env.client, 'get', `/tickets/${a.body.uuid}`)).body.status).toBe('expired');
    const expired = await rawError(env.client, 'get', `/tickets/${a.body.uuid}/wait`);
    expect(expired.statusCode).toBe(500);
    expect(expired.body).toEqual({ code: 'InternalError', message: `ticket ${a.body.uuid} is expired` });
  });

  it("answers missing tickets and bad requests with CNAPI's codes", async () => {
    const nope = randomUUID();
    const get = await rawError(env.client, 'get', `/tickets/${nope}`);
    expect(get.statusCode).toBe(404);
    expect(get.body).toEqual({ code: 'ResourceNotFound', message: `ticket ${nope} not found` });
    const wait = await rawError(env.client, 'get', `/tickets/${nope}/wait`);
    expect(wait.statusCode).toBe(404);
    expect(wait.body).toEqual({ code: 'ResourceNotFound', message: `no such ticket ${nope}` });
    expect((await rawError(env.client, 'put', `/tickets/${nope}/release`)).statusCode).toBe(404);
    const del = await rawError(env.client, 'del', `/tickets/${nope}`);
    expect(del.statusCode).toBe(500);
    const limit = await rawError(env.client, 'get', `/servers/${cn}/tickets?limit=1001`);
    expect(limit.statusCode).toBe(409);
    expect(limit.body).toEqual({ code: 'InvalidArgument', message: 'limit must be less than 1000' });
    const badLimit = await rawError(env.client, 'get', `/servers/${cn}/tickets?limit=0`);
    expect(badLimit.statusCode).toBe(500);
    expect(badLimit.body?.code).toBe('InvalidParameters');
    const all = await rawError(env.client, 'del', `/servers/${cn}/tickets`);
    expect(all.statusCode).toBe(412);
    expect(all.body).toEqual({ code: 'PreconditionFailed', message: 'Will not delete all tickets without ?force=true' });
    expect((await raw(env.client, 'del', `/servers/${cn}/tickets?force=true`)).statusCode).toBe(204);
    expect((await raw<Obj[]>(env.client, 'get', `/servers/${cn}/tickets`)).body).toEqual([]);
  });

  it("counts open provisioning tickets' VMs against the server in DAPI", async () => {
    const small = await env.register({ memoryMiB: 4096 });
    const vm = randomUUID();
    await raw(env.client, 'post', `/servers/${small}/tickets`, {
      scope: 'vm',
      id: vm,
      expires_at: inSeconds(60),
      action: 'provision',
      extra: { owner_uuid: randomUUID(), max_physical_memory: 3000, cpu_cap: 100, quota: 10, brand: 'joyent' },
    });
    const err = await rawError(env.client, 'post', '/allocate', {
      vm: { brand: 'joyent', owner_uuid: randomUUID(), ram: 1024, vm_uuid: randomUUID() },
      image: {},
      package: { cpu_cap: 100 },
      nic_tags: ['admin'],
      servers: [small],
    });
    expect(err.statusCode).toBe(409);
    expect(err.body?.message).toBe('No compute resources available: no servers with enough unreserved RAM');
  });
});
