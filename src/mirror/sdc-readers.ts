/**
 * The DC's list calls, through sdc-clients (the client library Triton's own services and tools
 * use), one page at a time: what capture reads is what any Triton consumer would be given,
 * query parameters, paging and error shapes included. Every call passes `limit` (and `offset`
 * or IMGAPI's `marker`), so sdc-clients never gathers a whole collection itself.
 */
import { createRequire } from 'node:module';
import { createQuietLogger } from '../common/log.js';
import type { Obj } from './format.js';

const require = createRequire(import.meta.url);

type Callback = (err: SdcError | null | undefined, body?: unknown, reqOrRes?: unknown, res?: unknown) => void;
/** The sdc-clients classes capture uses (callback style, untyped upstream). */
interface SdcClient {
  close(): void;
  [method: string]: unknown;
}
type SdcClass = new (opts: { url: string; log: unknown; agent: false; userAgent?: string }) => SdcClient;
const sdc = require('sdc-clients') as { CNAPI: SdcClass; VMAPI: SdcClass; NAPI: SdcClass; IMGAPI: SdcClass; PAPI: SdcClass };

/** restify-clients' error: the status and the service's body, when there was an answer. */
export interface SdcError extends Error {
  statusCode?: number;
  body?: { code?: string; message?: string };
}

export interface Page {
  items: Obj[];
  /** The answer's headers (VMAPI's `x-joyent-resource-count`). */
  headers: Record<string, string | string[] | undefined>;
}

export type ListKind = 'nic_tags' | 'networks' | 'network_pools' | 'nics' | 'servers' | 'vms' | 'images' | 'packages';
export type Lister = (query: Obj) => Promise<Page>;

export interface ReaderUrls {
  cnapi: string;
  vmapi: string;
  napi: string;
  imgapi?: string;
  papi?: string;
}

/** One client per API, for the length of a capture; `close()` ends them. */
export class SdcReaders {
  private readonly clients: SdcClient[] = [];
  private readonly listers = new Map<ListKind, Lister>();

  constructor(urls: ReaderUrls) {
    const log = createQuietLogger('mockcloud-mirror');
    const make = (Cls: SdcClass, url: string): SdcClient => {
      // No keep-alive agent: nothing holds the process open once the capture is done.
      const c = new Cls({ url, log, agent: false, userAgent: 'mockcloud-mirror' });
      this.clients.push(c);
      return c;
    };
    const napi = make(sdc.NAPI, urls.napi);
    const cnapi = make(sdc.CNAPI, urls.cnapi);
    const vmapi = make(sdc.VMAPI, urls.vmapi);
    this.listers.set('nic_tags', (q) => callList(napi, 'listNicTags', [q, {}]));
    this.listers.set('networks', (q) => callList(napi, 'listNetworks', [q, {}]));
    this.listers.set('network_pools', (q) => callList(napi, 'listNetworkPools', [q, {}]));
    this.listers.set('nics', (q) => callList(napi, 'listNics', [q, {}]));
    this.listers.set('servers', (q) => callList(cnapi, 'listServers', [q, {}]));
    this.listers.set('vms', (q) => callList(vmapi, 'listVms', [q, {}]));
    if (urls.imgapi) {
      const imgapi = make(sdc.IMGAPI, urls.imgapi);
      this.listers.set('images', (q) => callList(imgapi, 'listImages', [q, {}]));
    }
    if (urls.papi) {
      const papi = make(sdc.PAPI, urls.papi);
      // PAPI's list takes the paging in its options.
      this.listers.set('packages', ({ limit, offset, ...filter }) => callList(papi, 'list', [filter, { limit, offset }]));
    }
  }

  lister(kind: ListKind): Lister {
    const l = this.listers.get(kind);
    if (!l) throw new Error(`no client for ${kind}`);
    return l;
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

/**
 * Call a list method and resolve with its page. sdc-clients' callbacks differ in where the
 * response is: (err, body, req, res) for most, (err, body, res) for IMGAPI.
 */
function callList(client: SdcClient, method: string, args: unknown[]): Promise<Page> {
  return new Promise((resolve, reject) => {
    const fn = client[method] as (...a: unknown[]) => void;
    fn.call(client, ...args, ((err, body, a, b) => {
      if (err) {
        reject(err);
        return;
      }
      const res = [b, a].find((r): r is { headers: Page['headers'] } => typeof r === 'object' && r !== null && 'headers' in r && 'statusCode' in r);
      if (!Array.isArray(body)) {
        reject(Object.assign(new Error(`${method}: the answer is not a list`), { statusCode: 502 }));
        return;
      }
      resolve({ items: body as Obj[], headers: res?.headers ?? {} });
    }) as Callback);
  });
}
