/**
 * The dev CNAPI's operator routes, black box: `/diagnostics`, `/info`, `/loglevel` and unknown
 * routes (sdc-cnapi lib/endpoints/index.js, test/test-non-existent-route.js), platforms
 * (lib/endpoints/platforms.js, lib/models/platform.js), ImageGet (lib/endpoints/images.js), and
 * ServerSetup / ServerRecoveryConfig (lib/endpoints/servers.js).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CnapiEnv, PLATFORM } from './helpers/cnapi-env.js';
import { raw, rawError, waitFor } from './helpers/sdc-clients.js';

type Obj = Record<string, any>;

describe('dev CNAPI operator routes', () => {
  const env = new CnapiEnv();

  beforeAll(async () => {
    await env.start();
  });

  afterAll(async () => {
    await env.stop();
  });

  it('answers an unknown route as restify does, and /diagnostics with a start time that stays put', async () => {
    const first = await raw<Obj>(env.client, 'get', '/diagnostics');
    expect(first.statusCode).toBe(200);
    expect(new Date(first.body.start_timestamp).toISOString()).toBe(first.body.start_timestamp);
    expect(first.body).toMatchObject({ taskCallbacks: {}, pendingActivationsByServer: {} });
    expect(typeof first.body.memory.heapUsed).toBe('number');
    const missing = await rawError(env.client, 'get', '/doesnotexist');
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toEqual({ code: 'ResourceNotFound', message: '/doesnotexist does not exist' });
    const again = await raw<Obj>(env.client, 'get', '/diagnostics');
    expect(again.body.start_timestamp).toBe(first.body.start_timestamp);
    expect((await raw<Obj>(env.client, 'get', '/info')).body).toEqual({ version: '1.26.6' });
    expect((await raw<Obj>(env.client, 'get', '/loglevel')).body).toEqual({ level: expect.any(Number) });
  });

  it('lists the platforms of the DC, newest marked latest, once there is a headnode', async () => {
    const noHeadnode = await rawError(env.client, 'get', '/platforms');
    expect(noHeadnode.statusCode).toBe(500);
    expect(noHeadnode.body).toEqual({ code: 'InternalError', message: 'Error finding headnode: Could not find headnode' });

    await env.register({ headnode: true });
    await env.register({ platform: '20240101T000000Z' });
    const list = (await raw<Obj>(env.client, 'get', '/platforms')).body;
    expect(list).toEqual({ [PLATFORM]: {}, '20240101T000000Z': { latest: true } });
    const withOs = (await raw<Obj>(env.client, 'get', '/platforms?os=true')).body;
    expect(withOs).toEqual({ [PLATFORM]: { os: 'smartos' }, '20240101T000000Z': { os: 'smartos', latest: true } });
    const strict = await rawError(env.client, 'get', '/platforms?color=blue');
    expect(strict.statusCode).toBe(409);
    expect(strict.body).toEqual({ code: 'InvalidArgument', message: 'color is not an explicitly defined parameter' });
  });

  it("loads an image's details from the server's cn-agent (image_get)", async () => {
    const cn = await env.register();
    const image = randomUUID();
    env.agent.answers.set('image_get', { status: 200, body: { manifest: { uuid: image, name: 'base-64' } } });
    const res = await raw<Obj>(env.client, 'get', `/servers/${cn}/images/${image}`);
    expect(res.body).toEqual({ manifest: { uuid: image, name: 'base-64' } });
    const posted = env.agent.tasks().find((r) => (r.body as { task: string }).task === 'image_get')!;
    expect((posted.body as Obj).params).toEqual({ uuid: image });
    env.agent.answers.set('image_get', { status: 500, body: { error: 'Image not found' } });
    const err = await rawError(env.client, 'get', `/servers/${cn}/images/${randomUUID()}`);
    expect(err.statusCode).toBe(500);
    expect(err.body).toEqual({ code: 'InternalError', message: 'Image not found' });
  });

  it('answers ServerSetup of a set-up server with 204 and checks its parameters as CNAPI does', async () => {
    const cn = await env.register();
    expect((await raw(env.client, 'put', `/servers/${cn}/setup`, { hostname: 'cn7' })).statusCode).toBe(204);
    const layout = await rawError(env.client, 'put', `/servers/${cn}/setup`, { disk_layout: 'raid10' });
    expect(layout.statusCode).toBe(409);
    expect(layout.body).toEqual({
      code: 'InvalidArgument',
      message: "disk_layout must be one of: 'single', 'mirror', 'raidz1', 'raidz2', 'raidz3'",
    });
    const strict = await rawError(env.client, 'put', `/servers/${cn}/setup`, { colour: 'red' });
    expect(strict.statusCode).toBe(409);
    expect(strict.body?.message).toBe('colour is not an explicitly defined parameter');
  });

  it('refuses a recovery configuration with the preconditions CNAPI checks', async () => {
    const cn = await env.register();
    const cases: [Obj, string][] = [
      [{ action: 'stage' }, '"recovery_uuid", "pivtoken" and "action" params must be provided'],
      [{ action: 'drop', recovery_uuid: randomUUID(), pivtoken: 'x' }, 'Invalid "action" param. It must be one of "stage" or "activate"'],
      [{ action: 'stage', recovery_uuid: randomUUID(), pivtoken: 'x' }, '"template" and "token" params must be provided for recovery configuration "stage"'],
      [{ action: 'stage', recovery_uuid: randomUUID(), pivtoken: 'x', template: 't', token: 'k' }, 'Recovery Configuration can be set only for servers with encrypted zpools'],
    ];
    for (const [body, message] of cases) {
      const err = await rawError(env.client, 'post', `/servers/${cn}/recovery-config`, body);
      expect(err.statusCode).toBe(412);
      expect(err.body).toEqual({ code: 'PreconditionFailed', message });
    }
    const encrypted = await env.register({ sysinfo: { 'Zpool Encrypted': true } });
    const task = await raw<{ id: string }>(env.client, 'post', `/servers/${encrypted}/recovery-config`, {
      action: 'stage', recovery_uuid: randomUUID(), pivtoken: 'x', template: 't', token: 'k',
    });
    expect(typeof task.body.id).toBe('string');
    const posted = await waitFor(() => env.agent.tasks().find((r) => (r.body as { task: string }).task === 'recovery_config'));
    expect((posted.body as Obj).params).toMatchObject({ action: 'stage', pivtoken: 'x', template: 't', token: 'k' });
  });
});
