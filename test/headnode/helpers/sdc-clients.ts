/**
 * sdc-clients (the real Triton client library) with promises, for black-box tests of the
 * dev headnode. Errors keep restify-clients' shape: `statusCode` and the parsed `body`.
 */
import { createRequire } from 'node:module';
import { createQuietLogger } from '../../../src/common/log.js';

const require = createRequire(import.meta.url);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const sdc = require('sdc-clients') as { CNAPI: any; VMAPI: any; NAPI: any; PAPI: any };

export interface ClientError extends Error {
  statusCode?: number;
  body?: { code?: string; message?: string; errors?: { field: string; code: string; message?: string }[] };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Client = any;

export function cnapiClient(url: string): Client {
  return new sdc.CNAPI({ url, log: createQuietLogger('sdc-cnapi'), agent: false });
}

export function vmapiClient(url: string): Client {
  return new sdc.VMAPI({ url, log: createQuietLogger('sdc-vmapi'), agent: false });
}

export function napiClient(url: string): Client {
  return new sdc.NAPI({ url, log: createQuietLogger('sdc-napi'), agent: false });
}

export function papiClient(url: string): Client {
  return new sdc.PAPI({ url, log: createQuietLogger('sdc-papi'), agent: false, retry: { retries: 0 } });
}

/** Call a callback-style client method; resolves with its first result. */
export function call<T = any>(client: Client, method: string, ...args: unknown[]): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](...args, (err: ClientError | null | undefined, result: T) => {
      if (err) reject(err);
      else resolve(result);
    });
  });
}

/** The error a call rejects with (fails the test when it resolves). */
export async function callError(client: Client, method: string, ...args: unknown[]): Promise<ClientError> {
  try {
    const r = await call(client, method, ...args);
    throw new Error(`expected ${method} to fail, got ${JSON.stringify(r)}`);
  } catch (err) {
    if ((err as Error).message?.startsWith(`expected ${method} to fail`)) throw err;
    return err as ClientError;
  }
}

/** Raw restify-clients calls through the client's JSON client (routes sdc-clients lacks). */
export function raw<T = any>(
  client: Client,
  method: 'get' | 'post' | 'put' | 'del',
  path: string,
  body?: unknown,
): Promise<{ statusCode: number; body: T; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const cb = (
      err: ClientError | null,
      _req: unknown,
      res: { statusCode: number; headers: Record<string, string | string[] | undefined> },
      obj: T,
    ) => {
      if (err) reject(err);
      else resolve({ statusCode: res.statusCode, body: obj, headers: res.headers });
    };
    if (method === 'get' || method === 'del') client.client[method](path, cb);
    else client.client[method](path, body ?? {}, cb);
  });
}

export async function rawError(
  client: Client,
  method: 'get' | 'post' | 'put' | 'del',
  path: string,
  body?: unknown,
): Promise<ClientError> {
  try {
    const r = await raw(client, method, path, body);
    throw new Error(`expected ${method} ${path} to fail, got ${r.statusCode}`);
  } catch (err) {
    if ((err as Error).message?.startsWith('expected ')) throw err;
    return err as ClientError;
  }
}

export function closeClient(client: Client): void {
  client?.client?.close?.();
}

/** Poll `fn` until it returns a truthy value; bounded by `timeoutMs`. */
type Falsy = undefined | null | false | '' | 0;

export async function waitFor<T>(
  fn: () => Promise<T | Falsy> | T | Falsy,
  timeoutMs = 10_000,
  stepMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`waitFor timed out${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
