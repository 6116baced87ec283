/**
 * A dev NAPI (and optionally IMGAPI) on loopback for black-box tests, in a temp data dir
 * that survives `restart()` and is removed by `close()`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../../src/common/log.js';
import { HeadnodeStore } from '../../../src/headnode/store.js';
import { NapiService, type NapiServiceOptions } from '../../../src/headnode/napi/index.js';
import { closeClient, napiClient, type Client } from './sdc-clients.js';

export interface NapiEnv {
  dataDir: string;
  service: NapiService;
  client: Client;
  url: string;
  /** Stop and start again on the same data dir (a new port, a new client). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startNapi(opts: Partial<Omit<NapiServiceOptions, 'log' | 'store'>> = {}, dataDir?: string): Promise<NapiEnv> {
  const dir = dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'mockcloud-napi-')));
  const log = createQuietLogger('napi-test');
  const make = (): NapiService => new NapiService({ log, store: new HeadnodeStore({ dataDir: dir, log }), ...opts });
  const env: NapiEnv = {
    dataDir: dir,
    service: make(),
    client: undefined,
    url: '',
    async restart() {
      closeClient(env.client);
      await env.service.stop();
      env.service = make();
      await env.service.start({ host: '127.0.0.1', port: 0 });
      env.url = env.service.url;
      env.client = napiClient(env.url);
    },
    async close() {
      closeClient(env.client);
      await env.service.stop();
      if (!dataDir) await rm(dir, { recursive: true, force: true });
    },
  };
  await env.service.start({ host: '127.0.0.1', port: 0 });
  env.url = env.service.url;
  env.client = napiClient(env.url);
  return env;
}

/** A callback-style client call with its HTTP response (for headers such as Etag). */
export function callRes<T = any>(
  client: Client,
  method: string,
  ...args: unknown[]
): Promise<{ body: T; headers: Record<string, string | string[] | undefined>; statusCode: number }> {
  return new Promise((resolve, reject) => {
    client[method](...args, (err: Error | null, obj: T, _req: unknown, res: { headers: Record<string, string>; statusCode: number }) => {
      if (err) reject(err);
      else resolve({ body: obj, headers: res.headers, statusCode: res.statusCode });
    });
  });
}

/** A raw HTTP call (Node fetch) returning status, headers and the parsed body. */
export async function http(
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body };
}
