/**
 * One `mirror load` as its phases share it: the options, what was loaded for what was captured
 * (networks, servers, VMs, VM NIC MACs), the identities `--remap-uuids` derives, the loading
 * DC's HTTP calls (retried on a 5xx or no answer; a 4xx is `Refused`: the DC will not take it,
 * a re-run would not change that), and the tally the report is made from (load-report.ts).
 */
import { createHash } from 'node:crypto';
import { MockcloudError } from '../common/errors.js';
import type { HttpResponse, JsonHttpClient } from '../common/http-client.js';
import { retryWithBackoff } from '../common/retry.js';
import { repeatableUuidFromHex } from '../common/uuid.js';
import type { CaptureLimits, Obj, RecordKind } from './format.js';
import { LoadTally } from './load-report.js';

/** The daemon's control API (the CLI's DaemonClient fits). */
export interface ControlApi {
  request<T = unknown>(method: string, urlPath: string, body?: unknown): Promise<{ status: number; body: T }>;
}

export interface LoadOptions {
  file: string;
  control: ControlApi;
  http: JsonHttpClient;
  urls: { cnapi?: string; vmapi?: string; napi: string; imgapi?: string; papi?: string };
  remapUuids?: boolean;
  /** What remapped identities are derived with (default "mirror"). */
  remapSeed?: string;
  /** CNs created at once (default 16) and VMs (default 64). */
  serverConcurrency?: number;
  vmConcurrency?: number;
  /** How long a new CN may take to take tasks (registered with CNAPI), ms (default 60 s). */
  registerTimeoutMs?: number;
  onProgress?: (p: { kind: RecordKind; done: number; total: number }) => void;
  signal?: AbortSignal;
  /** How large a line, and the whole file decompressed, may be (format.ts's defaults). */
  limits?: Partial<CaptureLimits>;
}

/** A CN loaded for a captured server: where its cn-agent takes tasks. */
export interface LoadedServer {
  uuid: string;
  agentUrl: string;
}

export class LoadRun {
  readonly tally = new LoadTally();
  /** Captured network uuid → the loading DC's. */
  readonly networks = new Map<string, string>();
  /** Captured server uuid → the CN loaded for it. */
  readonly servers = new Map<string, LoadedServer>();
  /** Captured VM uuid → the VM made (or found) for it: whose NICs the nic records check. */
  readonly loadedVms = new Map<string, string>();
  /** Captured MACs of the VM NICs this load asked NAPI for (or found there): the ones to check. */
  readonly vmMacs = new Set<string>();
  /** Captured MACs of VM NICs left out on purpose (noted already). */
  readonly leftOutMacs = new Set<string>();
  /** The loading DC's admin network (the captured one is loaded as it). */
  adminNetwork: string | undefined;
  private readonly seed: string;

  constructor(readonly o: LoadOptions) {
    this.seed = o.remapSeed ?? 'mirror';
  }

  checkAborted(): void {
    if (this.o.signal?.aborted) throw new MockcloudError('ServiceUnavailable', 'load interrupted: run it again to finish');
  }

  note(what: string, example?: string): void {
    this.tally.note(what, example);
  }

  fail(kind: RecordKind, id: string, err: unknown): void {
    this.tally.fail(kind, id, err);
  }

  async call(method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown): Promise<HttpResponse> {
    return retryWithBackoff(
      async () => {
        const res = await this.o.http.request({ method, url, ...(body === undefined ? {} : { body }), timeoutMs: 60_000 });
        if (res.statusCode >= 500) throw httpError(method, url, res);
        return res;
      },
      { attempts: 4, minDelayMs: 200, maxDelayMs: 3000, stopped: () => this.o.signal?.aborted === true },
    );
  }

  async ok(method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown): Promise<Obj> {
    const res = await this.call(method, url, body);
    if (res.statusCode >= 300) throw httpError(method, url, res);
    return res.body as Obj;
  }

  async exists(url: string): Promise<Obj | undefined> {
    const res = await this.call('GET', url);
    if (res.statusCode === 404) return undefined;
    if (res.statusCode >= 300) throw httpError('GET', url, res);
    return res.body as Obj;
  }

  remap(kind: string, uuid: string): string {
    if (!this.o.remapUuids) return uuid;
    return repeatableUuidFromHex(createHash('sha256').update(`${this.seed}\0${kind}\0${uuid.toLowerCase()}`).digest('hex'));
  }

  remapMac(mac: string): string {
    if (!this.o.remapUuids) return mac;
    const h = createHash('sha256').update(`${this.seed}\0mac\0${mac.toLowerCase()}`).digest();
    // Locally administered, unicast.
    const bytes = [(h[0]! & 0xfc) | 0x02, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!];
    return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
  }
}

/** A 4xx of the loading DC: it will not take what it was given (see Loader.run). */
export class Refused extends MockcloudError {
  constructor(message: string) {
    super('BadGateway', message);
  }
}

export function httpError(method: string, url: string, res: HttpResponse): MockcloudError {
  const b = res.body as { code?: string; message?: string; errors?: { field?: string; message?: string }[] } | undefined;
  const fields = Array.isArray(b?.errors) ? ` (${b.errors.map((e) => `${e.field}: ${e.message}`).join('; ')})` : '';
  const message = `${method} ${url}: ${res.statusCode}${b?.code ? ` ${b.code}` : ''}${b?.message ? `: ${b.message}` : ''}${fields}`;
  return res.statusCode >= 400 && res.statusCode < 500 ? new Refused(message) : new MockcloudError('BadGateway', message);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
