/**
 * `mockcloud mirror capture`: read a DC through its APIs, read-only, into a capture file
 * (format.ts). Every list is paged as sdc-clients pages it (CNAPI, VMAPI, NAPI, PAPI: limit and
 * offset; IMGAPI: limit and an inclusive marker) and each page goes to the file before the
 * next is asked for, so at most one page of records is held, whatever the DC's size. Every GET
 * is tried again with backoff on a transport error or a 5xx.
 */
import { MockcloudError } from '../common/errors.js';
import type { HttpResponse, JsonHttpClient } from '../common/http-client.js';
import { retryWithBackoff } from '../common/retry.js';
import { CaptureWriter, type CaptureHeader, type Obj, type RecordKind } from './format.js';
import { Redactor } from './redact.js';

export interface CaptureUrls {
  cnapi: string;
  vmapi: string;
  napi: string;
  imgapi?: string;
  papi?: string;
}

export interface CaptureOptions {
  urls: CaptureUrls;
  http: JsonHttpClient;
  output: string;
  /** VMAPI states to list (`active` = every VM not destroyed). */
  vmStates: string[];
  redact: boolean;
  /** The redaction key (a secret): the same key, the same replacements in every capture; random by default. */
  redactKey?: string;
  adminUuid: string;
  /** Records per page (default 1000, CNAPI's servers with extras=all: 100). */
  pageSize?: number;
  /** Tries per GET (default 5). */
  attempts?: number;
  onProgress?: (p: CaptureProgress) => void;
  /** Stop at the next page (Ctrl-C): no file is left. */
  signal?: AbortSignal;
}

export interface CaptureProgress {
  kind: RecordKind;
  done: number;
  /** Known or estimated (VMAPI's x-joyent-resource-count), else undefined. */
  total?: number;
}

export async function capture(opts: CaptureOptions): Promise<CaptureHeader> {
  const started = Date.now();
  const writer = new CaptureWriter(opts.output);
  const redactor = opts.redact ? new Redactor(opts.adminUuid, opts.redactKey !== undefined ? Buffer.from(opts.redactKey, 'utf8') : undefined) : undefined;
  const skipped: string[] = [];
  const pageSize = opts.pageSize ?? 1000;
  let datacenter: string | undefined;
  const get = (url: string): Promise<HttpResponse> => getWithRetries(opts, url);
  try {
    const put = async (kind: RecordKind, items: Obj[], redact: ((o: Obj) => Obj) | undefined, total?: number, done = 0): Promise<number> => {
      for (const item of items) await writer.write(kind, redact ? redact(item) : item);
      const count = done + items.length;
      opts.onProgress?.({ kind, done: count, ...(total !== undefined ? { total } : {}) });
      return count;
    };
    const r = redactor;
    await pageByOffset(get, `${opts.urls.napi}/nic_tags`, pageSize, opts.signal, (items, done) => put('nic_tag', items, undefined, undefined, done));
    await pageByOffset(get, `${opts.urls.napi}/networks`, pageSize, opts.signal, (items, done) => put('network', items, r && ((o) => r.network(o)), undefined, done));
    await pageByOffset(get, `${opts.urls.napi}/network_pools`, pageSize, opts.signal, (items, done) => put('network_pool', items, r && ((o) => r.pool(o)), undefined, done));
    if (opts.urls.imgapi) {
      await pageImages(get, opts.urls.imgapi, pageSize, opts.signal, (items, done) => put('image', items, r && ((o) => r.image(o)), undefined, done));
    } else {
      skipped.push('images: no IMGAPI URL');
    }
    if (opts.urls.papi) {
      try {
        await pageByOffset(get, `${opts.urls.papi}/packages`, pageSize, opts.signal, (items, done) => put('package', items, r && ((o) => r.package(o)), undefined, done));
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        skipped.push(`packages: PAPI ${opts.urls.papi} could not be read (${(err as Error).message})`);
      }
    } else {
      skipped.push('packages: no PAPI URL');
    }
    // extras=all carries each server's VM summaries: smaller pages; the VMs come from VMAPI.
    await pageByOffset(get, `${opts.urls.cnapi}/servers?extras=all`, Math.min(pageSize, 100), opts.signal, (items, done) => {
      for (const s of items) {
        delete s.vms;
        const dc = (s.sysinfo as Obj | undefined)?.['Datacenter Name'] ?? s.datacenter;
        if (datacenter === undefined && typeof dc === 'string') datacenter = dc;
      }
      return put('server', items, r && ((o) => r.server(o)), undefined, done);
    });
    let vmsDone = 0;
    let vmTotal = 0;
    for (const state of opts.vmStates) {
      const head = await get(`${opts.urls.vmapi}/vms?state=${encodeURIComponent(state)}&limit=1`);
      vmTotal += Number(head.headers['x-joyent-resource-count'] ?? 0) || 0;
    }
    for (const state of opts.vmStates) {
      await pageByOffset(get, `${opts.urls.vmapi}/vms?state=${encodeURIComponent(state)}`, pageSize, opts.signal, async (items) => {
        vmsDone = await put('vm', items, r && ((o) => r.vm(o)), Math.max(vmTotal, vmsDone + items.length), vmsDone);
        return vmsDone;
      });
    }
    await pageByOffset(get, `${opts.urls.napi}/nics`, pageSize, opts.signal, (items, done) => put('nic', items, r && ((o) => r.nic(o)), undefined, done));
    const source: CaptureHeader['source'] = { cnapi: opts.urls.cnapi, vmapi: opts.urls.vmapi, napi: opts.urls.napi };
    if (opts.urls.imgapi) source.imgapi = opts.urls.imgapi;
    if (opts.urls.papi) source.papi = opts.urls.papi;
    if (datacenter !== undefined) source.datacenter = datacenter;
    return await writer.finish({
      source,
      capturedAt: new Date(started).toISOString(),
      durationMs: Date.now() - started,
      redacted: opts.redact,
      vmStates: opts.vmStates,
      adminUuid: opts.adminUuid,
      skipped,
    });
  } catch (err) {
    await writer.abort();
    throw err;
  }
}

type Get = (url: string) => Promise<HttpResponse>;
type OnPage = (items: Obj[], done: number) => Promise<number>;

/** Pages of `limit` from `offset` 0 until a short page (sdc-clients' listServers/listVms). */
async function pageByOffset(get: Get, base: string, limit: number, signal: AbortSignal | undefined, onPage: OnPage): Promise<void> {
  const sep = base.includes('?') ? '&' : '?';
  let done = 0;
  for (let offset = 0; ; offset += limit) {
    checkAborted(signal);
    const res = await get(`${base}${sep}limit=${limit}&offset=${offset}`);
    const items = listOf(res, base);
    done = await onPage(items, done);
    if (items.length < limit) return;
  }
}

/** IMGAPI's pages: `marker` is the last uuid seen and comes back first (sdc-clients drops it). */
async function pageImages(get: Get, imgapi: string, limit: number, signal: AbortSignal | undefined, onPage: OnPage): Promise<void> {
  let marker: string | undefined;
  let done = 0;
  for (;;) {
    checkAborted(signal);
    const res = await get(`${imgapi}/images?state=all&limit=${limit}${marker ? `&marker=${marker}` : ''}`);
    const page = listOf(res, `${imgapi}/images`);
    const items = marker !== undefined && page[0]?.uuid === marker ? page.slice(1) : page;
    done = await onPage(items, done);
    if (page.length < limit || items.length === 0) return;
    marker = String(items[items.length - 1]!.uuid);
  }
}

function listOf(res: HttpResponse, what: string): Obj[] {
  if (!Array.isArray(res.body)) throw new MockcloudError('BadGateway', `GET ${what}: the answer is not a list`);
  return res.body as Obj[];
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new MockcloudError('ServiceUnavailable', 'capture interrupted');
}

async function getWithRetries(opts: CaptureOptions, url: string): Promise<HttpResponse> {
  return retryWithBackoff(
    async () => {
      const res = await opts.http.request({ method: 'GET', url, timeoutMs: 60_000 });
      if (res.statusCode >= 300) throw new HttpAnswer(url, res);
      return res;
    },
    {
      attempts: opts.attempts ?? 5,
      minDelayMs: 200,
      maxDelayMs: 5000,
      retryable: (err) => !(err instanceof HttpAnswer) || err.res.statusCode >= 500,
      stopped: () => opts.signal?.aborted === true,
    },
  );
}

class HttpAnswer extends MockcloudError {
  constructor(
    url: string,
    readonly res: HttpResponse,
  ) {
    const b = res.body as { code?: string; message?: string } | undefined;
    super('BadGateway', `GET ${url}: ${res.statusCode}${b?.code ? ` ${b.code}` : ''}${b?.message ? `: ${b.message}` : ''}`);
  }
}
