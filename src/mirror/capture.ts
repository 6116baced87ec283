/**
 * `mockcloud mirror capture`: read a DC through its APIs with sdc-clients (sdc-readers.ts),
 * read-only, into a capture file (format.ts). Every list is asked for a page at a time
 * (CNAPI, VMAPI, NAPI, PAPI: limit and offset; IMGAPI: limit and an inclusive marker) and each
 * page goes to the file before the next is asked for, so at most one page of records is held,
 * whatever the DC's size. Every page is asked again with backoff on a transport error or a 5xx.
 */
import { MockcloudError } from '../common/errors.js';
import { retryWithBackoff } from '../common/retry.js';
import { CaptureWriter, type CaptureHeader, type Obj, type RecordKind } from './format.js';
import { Redactor } from './redact.js';
import { SdcReaders, type Lister, type Page, type SdcError } from './sdc-readers.js';

export interface CaptureUrls {
  cnapi: string;
  vmapi: string;
  napi: string;
  imgapi?: string;
  papi?: string;
}

export interface CaptureOptions {
  urls: CaptureUrls;
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
  const readers = new SdcReaders(opts.urls);
  const list =
    (kind: Parameters<SdcReaders['lister']>[0], fixed: Obj = {}): Get =>
    (query) =>
      pageWithRetries(opts, kind, readers.lister(kind), { ...fixed, ...query });
  try {
    const put = async (kind: RecordKind, items: Obj[], redact: ((o: Obj) => Obj) | undefined, total?: number, done = 0): Promise<number> => {
      for (const item of items) await writer.write(kind, redact ? redact(item) : item);
      const count = done + items.length;
      opts.onProgress?.({ kind, done: count, ...(total !== undefined ? { total } : {}) });
      return count;
    };
    const r = redactor;
    await pageByOffset(list('nic_tags'), pageSize, opts.signal, (items, done) => put('nic_tag', items, undefined, undefined, done));
    await pageByOffset(list('networks'), pageSize, opts.signal, (items, done) => put('network', items, r && ((o) => r.network(o)), undefined, done));
    await pageByOffset(list('network_pools'), pageSize, opts.signal, (items, done) => put('network_pool', items, r && ((o) => r.pool(o)), undefined, done));
    if (opts.urls.imgapi) {
      await pageImages(list('images', { state: 'all' }), pageSize, opts.signal, (items, done) => put('image', items, r && ((o) => r.image(o)), undefined, done));
    } else {
      skipped.push('images: no IMGAPI URL');
    }
    if (opts.urls.papi) {
      try {
        await pageByOffset(list('packages'), pageSize, opts.signal, (items, done) => put('package', items, r && ((o) => r.package(o)), undefined, done));
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        skipped.push(`packages: PAPI ${opts.urls.papi} could not be read (${(err as Error).message})`);
      }
    } else {
      skipped.push('packages: no PAPI URL');
    }
    // extras=all carries each server's VM summaries: smaller pages; the VMs come from VMAPI.
    await pageByOffset(list('servers', { extras: 'all' }), Math.min(pageSize, 100), opts.signal, (items, done) => {
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
      const head = await list('vms', { state })({ limit: 1, offset: 0 });
      vmTotal += Number(head.headers['x-joyent-resource-count'] ?? 0) || 0;
    }
    for (const state of opts.vmStates) {
      await pageByOffset(list('vms', { state }), pageSize, opts.signal, async (items) => {
        vmsDone = await put('vm', items, r && ((o) => r.vm(o)), Math.max(vmTotal, vmsDone + items.length), vmsDone);
        return vmsDone;
      });
    }
    await pageByOffset(list('nics'), pageSize, opts.signal, (items, done) => put('nic', items, r && ((o) => r.nic(o)), undefined, done));
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
  } finally {
    readers.close();
  }
}

type Get = (query: Obj) => Promise<Page>;
type OnPage = (items: Obj[], done: number) => Promise<number>;

/** Pages of `limit` from `offset` 0 until a short page. */
async function pageByOffset(get: Get, limit: number, signal: AbortSignal | undefined, onPage: OnPage): Promise<void> {
  let done = 0;
  for (let offset = 0; ; offset += limit) {
    checkAborted(signal);
    const { items } = await get({ limit, offset });
    done = await onPage(items, done);
    if (items.length < limit) return;
  }
}

/** IMGAPI's pages: `marker` is the last uuid seen and comes back first (dropped here). */
async function pageImages(get: Get, limit: number, signal: AbortSignal | undefined, onPage: OnPage): Promise<void> {
  let marker: string | undefined;
  let done = 0;
  for (;;) {
    checkAborted(signal);
    const { items: page } = await get({ limit, ...(marker ? { marker } : {}) });
    const items = marker !== undefined && page[0]?.uuid === marker ? page.slice(1) : page;
    done = await onPage(items, done);
    if (page.length < limit || items.length === 0) return;
    marker = String(items[items.length - 1]!.uuid);
  }
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new MockcloudError('ServiceUnavailable', 'capture interrupted');
}

/** One page, asked again with backoff on a transport error or a 5xx; a 4xx is final. */
function pageWithRetries(opts: CaptureOptions, kind: string, lister: Lister, query: Obj): Promise<Page> {
  return retryWithBackoff(() => lister(query), {
    attempts: opts.attempts ?? 5,
    minDelayMs: 200,
    maxDelayMs: 5000,
    retryable: (err) => {
      const status = (err as SdcError).statusCode;
      return status === undefined || status >= 500;
    },
    stopped: () => opts.signal?.aborted === true,
  }).catch((err: SdcError) => {
    if (err instanceof MockcloudError) throw err;
    const b = err.body;
    const what = err.statusCode !== undefined ? `${err.statusCode}${b?.code ? ` ${b.code}` : ''}: ${b?.message ?? err.message}` : err.message;
    throw new MockcloudError('BadGateway', `listing ${kind}: ${what}`);
  });
}
