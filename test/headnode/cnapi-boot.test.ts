/**
 * The dev CNAPI's `default` server record and boot parameters, black box: sdc-cnapi
 * lib/endpoints/boot_params.js and lib/endpoints/servers.js (ServerGet/ServerUpdate of
 * `default`), lib/models/server.js (setDefaultServer, getBootParamsDefault, initialValues,
 * getBootParams, updateBootParams) and lib/validation/endpoints.js (validateBootModules).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CnapiEnv, PLATFORM } from './helpers/cnapi-env.js';
import { call, raw, rawError } from './helpers/sdc-clients.js';

type Obj = Record<string, any>;

const b64 = (s: string): string => Buffer.from(s, 'ascii').toString('base64');

describe('dev CNAPI default server and boot parameters', () => {
  const env = new CnapiEnv();
  let cn: string;

  beforeAll(async () => {
    await env.start();
    await env.register({ headnode: true });
    cn = await env.register();
  });

  afterAll(async () => {
    await env.stop();
  });

  it('keeps a `default` server record: the boot parameters new servers get, never listed as a server', async () => {
    const d = await call<Obj>(env.client, 'getServer', 'default');
    expect(d).toMatchObject({
      uuid: 'default',
      boot_platform: PLATFORM,
      boot_params: {},
      kernel_flags: {},
      boot_modules: [],
      default_console: 'serial',
      serial: 'ttyb',
      status: 'unknown',
      last_heartbeat: null,
    });
    const listed = await call<Obj[]>(env.client, 'listServers', {});
    expect(listed.map((s) => s.uuid)).not.toContain('default');
    const boot = await raw<Obj>(env.client, 'get', '/boot/default');
    expect(boot.body).toEqual({
      platform: PLATFORM,
      kernel_args: { rabbitmq: expect.stringMatching(/^guest:guest:[^:]+:5672$/), smt_enabled: true },
      kernel_flags: {},
      boot_modules: [],
      default_console: 'serial',
      serial: 'ttyb',
    });
  });

  it('gives a new server the default boot parameters (POST /boot/default merges, null deletes)', async () => {
    await raw(env.client, 'post', '/boot/default', { kernel_args: { noimport: 'true', smt_enabled: false }, kernel_flags: { '-k': true } });
    await raw(env.client, 'post', '/boot/default', { kernel_args: { noimport: null } });
    const boot = (await raw<Obj>(env.client, 'get', '/boot/default')).body;
    expect(boot.kernel_args).toMatchObject({ smt_enabled: false });
    expect(boot.kernel_args).not.toHaveProperty('noimport');
    expect(boot.kernel_flags).toEqual({ '-k': true });
    const fresh = await env.register();
    const s = await call<Obj>(env.client, 'getServer', fresh);
    expect(s.boot_params).toMatchObject({ smt_enabled: false, rabbitmq: boot.kernel_args.rabbitmq });
    expect(s.kernel_flags).toEqual({ '-k': true });
    expect(s.boot_platform).toBe(PLATFORM);
    // The record itself is CNAPI's own: ServerUpdate refuses it.
    const upd = await rawError(env.client, 'post', '/servers/default', { comments: 'x' });
    expect(upd.statusCode).toBe(500);
  });

  it("refuses boot modules as CNAPI's validateBootModules does: format, base64, 4 KiB, path", async () => {
    const cases: [Obj, string][] = [
      [{ foo: 'bar', extra: 'key' }, 'Unexpected format for boot_module: {"foo":"bar","extra":"key","type":"base64"}'],
      [{ path: 'etc/ppt_aliases', content: 'ppt "/pci@0,0/pci8086,151@1/display@0"\n' }, "Contents for module 'etc/ppt_aliases' must be base64 encoded"],
      [{ path: 'etc/ppt_aliases', content: Buffer.alloc(5 * 1024).toString('base64') }, "Module 'etc/ppt_aliases' exceeds the maximum allowed size of 4KB"],
      [{ path: './etc/ppt_aliases', content: Buffer.alloc(4 * 1024).toString('base64') }, "Invalid path for boot_module: './etc/ppt_aliases' (path cannot contain '.' or '..')"],
      [{ path: 'etc/x', content: b64('x'), type: 'gzip' }, "Unsupported type gzip for module 'etc/x'"],
    ];
    for (const [module, message] of cases) {
      const err = await rawError(env.client, 'put', `/boot/${cn}`, { boot_modules: [module] });
      expect(err.statusCode).toBe(409);
      expect(err.body).toEqual({ code: 'InvalidArgument', message: `Values provided for boot_modules contain errors: ${message}` });
    }
    const fancy = { path: 'etc/ppt..aliases/super...fancy.name', content: b64('ppt "/pci@0,0/pci8086,151@1/display@0"\n') };
    const ok = await raw(env.client, 'put', `/boot/${cn}`, { boot_modules: [fancy], kernel_args: { foo: 'bar' } });
    expect(ok.statusCode).toBe(200);
    const boot = (await raw<Obj>(env.client, 'get', `/boot/${cn}`)).body;
    expect(boot.boot_modules).toEqual([{ ...fancy, type: 'base64' }]);
    expect(boot.kernel_args).toMatchObject({ hostname: `VC${cn.slice(0, 8).toUpperCase()}`, foo: 'bar' });
    expect(boot.platform).toBe(PLATFORM);
  });

  it('updates one server\'s boot parameters in place; unknown platforms and servers are refused', async () => {
    await raw(env.client, 'put', `/boot/${cn}`, { kernel_args: { a: '1', b: '2' } });
    const res = await raw(env.client, 'post', `/boot/${cn}`, { kernel_args: { b: null, c: '3' }, serial: 'ttya' });
    expect(res.statusCode).toBe(204);
    const boot = (await raw<Obj>(env.client, 'get', `/boot/${cn}`)).body;
    expect(boot.kernel_args).toMatchObject({ a: '1', c: '3' });
    expect(boot.kernel_args).not.toHaveProperty('b');
    expect(boot.serial).toBe('ttya');
    const badPlatform = await rawError(env.client, 'put', `/boot/${cn}`, { platform: '20990101T000000Z' });
    expect(badPlatform.statusCode).toBe(500);
    expect(badPlatform.body).toEqual({ code: 'InternalError', message: "Platform '20990101T000000Z' does not exist" });
    const unknown = randomUUID();
    const missing = await rawError(env.client, 'get', `/boot/${unknown}`);
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toEqual({ code: 'ResourceNotFound', message: `Server ${unknown} not found` });
    const badUuid = await rawError(env.client, 'get', '/boot/not-a-uuid');
    expect(badUuid.statusCode).toBe(409);
    expect(badUuid.body).toEqual({ code: 'InvalidArgument', message: 'Invalid server_uuid' });
  });
});
