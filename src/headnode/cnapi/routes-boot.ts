/**
 * Boot parameters (sdc-cnapi lib/endpoints/boot_params.js, lib/models/server.js
 * getBootParams*, setBootParams, updateBootParams, setDefaultServer, updateDefaultServer): what
 * booter hands a server at boot, per server and for the `default` server record that new
 * servers start from. Boot modules are checked as CNAPI's validateBootModules checks them
 * (lib/validation/endpoints.js): format, path, 4 KiB size, base64 content.
 */
import path from 'node:path';
import { MockcloudError } from '../../common/errors.js';
import { noContent, ok, params, route, type Params, type RestifyServer } from '../http.js';
import { requireServer, type CnapiContext } from './context.js';
import { listPlatforms } from './platforms.js';
import type { ServerRecord } from './servers.js';
import { ensureParamsValid, type Rules } from './validate.js';

const MAX_BOOT_MODULE_BYTES = 4 * 1024;

const DEFAULT_RULES: Rules = {
  platform: { optional: true, type: 'string', trim: true },
  kernel_args: { optional: true, type: 'object' },
};

const SET_RULES: Rules = {
  platform: { optional: true, type: 'string', trim: true },
  default_console: { optional: true, type: 'string', trim: true },
  serial: { optional: true, type: 'string', trim: true },
  kernel_args: { optional: true, type: 'object' },
  kernel_flags: { optional: true, type: 'object' },
};

type Obj = Record<string, unknown>;

/** validateBootModules: every complaint, joined, as one 409 InvalidArgument. */
export function checkBootModules(modules: unknown): void {
  if (!Array.isArray(modules)) return;
  const errs: string[] = [];
  for (const m of modules as Obj[]) {
    if (!m || typeof m !== 'object') {
      errs.push(`Unexpected format for boot_module: ${JSON.stringify(m)}`);
      continue;
    }
    m.type = m.type || 'base64';
    const p = m.path as string | undefined;
    const content = m.content as string | undefined;
    if (m.type !== 'base64') {
      errs.push(`Unsupported type ${String(m.type)} for module '${String(p)}'`);
      continue;
    }
    if (!p || !content) {
      errs.push(`Unexpected format for boot_module: ${JSON.stringify(m)}`);
      continue;
    }
    if (path.posix.normalize(String(p)) !== p) {
      errs.push(`Invalid path for boot_module: '${p}' (path cannot contain '.' or '..')`);
      continue;
    }
    if (Buffer.byteLength(String(content), 'base64') > MAX_BOOT_MODULE_BYTES) {
      errs.push(`Module '${p}' exceeds the maximum allowed size of 4KB`);
      continue;
    }
    if (Buffer.from(String(content), 'base64').toString('base64') !== content) {
      errs.push(`Contents for module '${p}' must be base64 encoded`);
    }
  }
  if (errs.length > 0) {
    throw new MockcloudError('InvalidArgument', `Values provided for boot_modules contain errors: ${errs.join(',\n')}`);
  }
}

/** `null` deletes a key, anything else sets it. */
function mergeKeys(base: unknown, changes: Obj): Obj {
  const out: Obj = { ...((base ?? {}) as Obj) };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

export function mountBootRoutes(server: RestifyServer, ctx: CnapiContext): void {
  const log = ctx.log;

  const requirePlatform = (platform: unknown): void => {
    if (platform && !Object.prototype.hasOwnProperty.call(listPlatforms(ctx), String(platform))) {
      throw new MockcloudError('InternalError', `Platform '${String(platform)}' does not exist`);
    }
  };

  const defaultRecord = (): ServerRecord => ctx.servers.ensureDefault(ctx.liveImage);

  server.get(
    { path: '/boot/default', name: 'BootParamsGetDefault' },
    route(log, async () => {
      defaultRecord();
      return ok(ctx.servers.defaultBootParams());
    }),
  );

  server.put(
    { path: '/boot/default', name: 'BootParamsSetDefault' },
    route(log, async (req) => {
      const p = ensureParamsValid(params(req), DEFAULT_RULES);
      if (p.boot_modules) checkBootModules(p.boot_modules);
      requirePlatform(p.platform);
      ctx.servers.replaceDefault({
        boot_platform: p.platform,
        boot_params: p.kernel_args,
        default_console: p.default_console,
        serial: p.serial,
        boot_modules: p.boot_modules || [],
      });
      await ctx.saveServers(true);
      return noContent();
    }),
  );

  server.post(
    { path: '/boot/default', name: 'BootParamsUpdateDefault' },
    route(log, async (req) => {
      const p = ensureParamsValid(params(req), DEFAULT_RULES);
      if (p.boot_modules) checkBootModules(p.boot_modules);
      requirePlatform(p.platform);
      const d = structuredClone(defaultRecord());
      d.boot_params ??= {};
      if (p.boot_modules) d.boot_modules = p.boot_modules;
      if (p.platform) d.boot_platform = p.platform;
      if (p.kernel_flags && typeof p.kernel_flags === 'object') d.kernel_flags = mergeKeys(d.kernel_flags, p.kernel_flags as Obj);
      if (p.kernel_args) d.boot_params = mergeKeys(d.boot_params, p.kernel_args as Obj);
      for (const n of ['default_console', 'serial'] as const) {
        if (p[n] === null) delete d[n];
        else d[n] = p[n] || d[n];
      }
      ctx.servers.replaceDefault(d);
      await ctx.saveServers(true);
      return noContent();
    }),
  );

  server.get(
    { path: '/boot/:server_uuid', name: 'BootParamsGet' },
    route(log, async (req) => {
      const s = requireServer(ctx, params(req).server_uuid);
      return ok({
        platform: s.boot_platform,
        kernel_args: { hostname: s.hostname, rabbitmq: ctx.servers.rabbitmq, ...((s.boot_params ?? {}) as Obj) },
        kernel_flags: { ...((s.kernel_flags ?? {}) as Obj) },
        boot_modules: s.boot_modules ?? [],
        default_console: s.default_console,
        serial: s.serial,
      });
    }),
  );

  server.put(
    { path: '/boot/:server_uuid', name: 'BootParamsSet' },
    route(log, async (req) => {
      const p0 = params(req);
      const s = requireServer(ctx, p0.server_uuid);
      const p = ensureParamsValid(p0, SET_RULES);
      const kernelArgs = p.kernel_args || p.boot_params || {};
      if (p.boot_modules) checkBootModules(p.boot_modules);
      const platforms = listPlatforms(ctx);
      if (p.platform && !Object.prototype.hasOwnProperty.call(platforms, String(p.platform))) {
        throw new MockcloudError('InternalError', `Platform '${String(p.platform)}' does not exist`);
      }
      const platform = p.platform || Object.keys(platforms).filter((k) => platforms[k]!.latest).pop();
      ctx.servers.upsert(s.uuid, {
        boot_modules: p.boot_modules || [],
        boot_params: kernelArgs,
        boot_platform: platform,
        default_console: p.default_console,
        kernel_flags: p.kernel_flags || {},
        serial: p.serial,
      });
      await ctx.saveServers(true);
      // CNAPI sends what its upsert called back with: nothing.
      return { status: 200 };
    }),
  );

  server.post(
    { path: '/boot/:server_uuid', name: 'BootParamsUpdate' },
    route(log, async (req) => {
      const p0 = params(req);
      const s = requireServer(ctx, p0.server_uuid);
      const p = ensureParamsValid(p0, DEFAULT_RULES);
      const kernelArgs = p.kernel_args || p.params;
      if (p.boot_modules) checkBootModules(p.boot_modules);
      requirePlatform(p.platform);
      const change: Params = {};
      if (p.platform) change.boot_platform = p.platform;
      if (p.boot_modules) change.boot_modules = p.boot_modules;
      if (kernelArgs && typeof kernelArgs === 'object') change.boot_params = mergeKeys(s.boot_params, kernelArgs as Obj);
      if (p.kernel_flags && typeof p.kernel_flags === 'object') change.kernel_flags = mergeKeys(s.kernel_flags, p.kernel_flags as Obj);
      for (const n of ['default_console', 'serial'] as const) {
        change[n] = p[n] === null ? '' : p[n] || s[n];
      }
      ctx.servers.upsert(s.uuid, change);
      await ctx.saveServers(true);
      return noContent();
    }),
  );
}
