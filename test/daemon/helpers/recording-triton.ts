/**
 * A recording stand-in for CNAPI and NAPI, for tests: records every request (method, path,
 * body, headers, time) and answers like the real services do for the routes a mock CN uses.
 * Failures can be injected per route (`failNext`), e.g. to check registration retries, and
 * `hang` makes it take requests and never answer them.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
  headers: http.IncomingHttpHeaders;
  at: number;
}

/** As a `failNext` reply: the request is handled as usual, but the answer is lost (a reset). */
export const LOST = -1;

export interface CannedReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export class RecordingTriton {
  readonly requests: RecordedRequest[] = [];
  /** NICs NAPI knows, by MAC without colons. */
  readonly nics = new Map<string, Record<string, unknown>>();
  /** Servers CNAPI knows (from their sysinfo registrations), by uuid. */
  readonly servers = new Map<string, Record<string, unknown>>();
  /** VMs VMAPI knows, by uuid. */
  readonly vms = new Map<string, Record<string, unknown>>();
  /**
   * List every NIC and VM whatever the query asks (an older NAPI, a proxy that drops the query,
   * a bug): what a client deletes from a list must be checked by the client.
   */
  ignoreFilters = false;
  private readonly failures: { match: RegExp; method?: string; reply: CannedReply; remaining: number }[] = [];
  private readonly delays: { match: RegExp; method?: string; ms: number; remaining: number }[] = [];
  private readonly afters: { match: RegExp; method: string; fn: () => void }[] = [];
  private server: http.Server | undefined;
  private nextIp = 10;
  private readonly held: http.ServerResponse[] = [];
  /** Record requests but never answer them (a CNAPI that accepts connections and hangs). */
  hang = false;
  /** Requests this matches are recorded and then held unanswered (in `parked`) until `release`. */
  holdIf: ((r: RecordedRequest) => boolean) | undefined;
  readonly parked: { rec: RecordedRequest; res: http.ServerResponse }[] = [];
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = undefined;
        if (text) {
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
        }
        const rec: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', body, headers: req.headers, at: Date.now() };
        this.requests.push(rec);
        if (this.hang) {
          this.held.push(res);
          return;
        }
        if (this.holdIf?.(rec)) {
          this.parked.push({ rec, res });
          return;
        }
        const delay = this.delays.find((d) => d.remaining > 0 && d.match.test(rec.path) && (!d.method || d.method === rec.method));
        if (delay) {
          delay.remaining--;
          setTimeout(() => this.answer(rec, res), delay.ms);
          return;
        }
        this.answer(rec, res);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private answer(rec: RecordedRequest, res: http.ServerResponse): void {
    const reply = this.reply(rec);
    if (reply.status === LOST) {
      // Done, but the answer is lost: the connection is reset instead.
      this.reply({ ...rec, lost: true } as RecordedRequest);
      res.socket?.resetAndDestroy();
      return;
    }
    const out = reply.body === undefined ? '' : JSON.stringify(reply.body);
    res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out), ...reply.headers });
    res.end(out);
    const after = this.afters.findIndex((a) => a.method === rec.method && a.match.test(rec.path));
    if (after >= 0) this.afters.splice(after, 1)[0]!.fn();
  }

  /** Once the next request matching `method` and `path` is answered, `fn` runs (the DC changes between two calls). */
  afterNext(method: string, path: RegExp, fn: () => void): void {
    this.afters.push({ method, match: path, fn });
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    for (const res of this.held.splice(0)) res.destroy();
    for (const { res } of this.parked.splice(0)) res.destroy();
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** The next `times` requests matching `path` (and `method`) get `reply`. */
  failNext(path: RegExp, reply: CannedReply, times = 1, method?: string): void {
    this.failures.push({ match: path, reply, remaining: times, ...(method ? { method } : {}) });
  }

  /** The next `times` requests matching `path` (and `method`) are done, and answered, `ms` late. */
  delayNext(path: RegExp, ms: number, times = 1, method?: string): void {
    this.delays.push({ match: path, ms, remaining: times, ...(method ? { method } : {}) });
  }

  /** Answer the held requests `which` matches (all by default), in the order they came. */
  release(which: (r: RecordedRequest) => boolean = () => true): void {
    for (const p of this.parked.filter((x) => which(x.rec))) {
      this.parked.splice(this.parked.indexOf(p), 1);
      this.answer(p.rec, p.res);
    }
  }

  /** Drop the injected failures not used yet. */
  clearFailures(): void {
    this.failures.length = 0;
  }

  find(method: string, path: RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.path));
  }

  private reply(r: RecordedRequest): CannedReply {
    for (const f of (r as { lost?: boolean }).lost ? [] : this.failures) {
      if (f.remaining > 0 && f.match.test(r.path) && (!f.method || f.method === r.method)) {
        f.remaining--;
        return f.reply;
      }
    }
    const p = r.path.split('?')[0]!;
    const q = new URLSearchParams(r.path.split('?')[1] ?? '');
    // CNAPI
    const sysinfoPath = /^\/servers\/([^/]+)\/sysinfo$/.exec(p);
    if (r.method === 'POST' && sysinfoPath) {
      const sysinfo = (r.body as { sysinfo?: unknown } | undefined)?.sysinfo;
      this.servers.set(sysinfoPath[1]!, { uuid: sysinfoPath[1], sysinfo });
      return { status: 200 };
    }
    if (r.method === 'POST' && /^\/servers\/[^/]+\/events\/(heartbeat|status)$/.test(p)) return { status: 204 };
    const serverPath = /^\/servers\/([^/]+)$/.exec(p);
    if (r.method === 'POST' && serverPath) return { status: 204 };
    if (r.method === 'GET' && serverPath) {
      const server = this.servers.get(serverPath[1]!);
      return server ? { status: 200, body: server } : { status: 404, body: { code: 'ResourceNotFound', message: 'server not found' } };
    }
    if (r.method === 'DELETE' && serverPath) {
      this.servers.delete(serverPath[1]!);
      return { status: 204 };
    }
    // VMAPI
    if (r.method === 'GET' && p === '/vms') {
      const server = this.ignoreFilters ? null : q.get('server_uuid');
      const offset = Number(q.get('offset') ?? 0);
      const limit = Number(q.get('limit') ?? 1000);
      const all = [...this.vms.values()].filter((vm) => vm.state !== 'destroyed' && (!server || vm.server_uuid === server));
      return { status: 200, body: all.slice(offset, offset + limit) };
    }
    const vmPath = /^\/vms\/([^/]+)$/.exec(p);
    if (vmPath && r.method === 'GET') {
      const vm = this.vms.get(vmPath[1]!);
      return vm ? { status: 200, body: vm, headers: { etag: vmEtag(vm) } } : { status: 404, body: { code: 'ResourceNotFound', message: 'VM not found' } };
    }
    if (vmPath && r.method === 'PUT') {
      // A write conditional on what was read: refused once the VM changed since.
      const ifMatch = r.headers['if-match'];
      const vm = this.vms.get(vmPath[1]!);
      if (ifMatch !== undefined && (!vm || vmEtag(vm) !== ifMatch)) {
        return { status: 412, body: { code: 'PreconditionFailed', message: 'if-match does not match the VM' } };
      }
      this.vms.set(vmPath[1]!, r.body as Record<string, unknown>);
      return { status: 200, body: r.body };
    }
    // NAPI
    const nicPath = /^\/nics\/([0-9a-f]{12})$/.exec(p);
    if (nicPath && r.method === 'GET') {
      const nic = this.nics.get(nicPath[1]!);
      return nic ? { status: 200, body: nic } : { status: 404, body: { code: 'ResourceNotFound', message: 'nic not found' } };
    }
    if (nicPath && r.method === 'DELETE') {
      return this.nics.delete(nicPath[1]!) ? { status: 204 } : { status: 404, body: { code: 'ResourceNotFound', message: 'nic not found' } };
    }
    if (r.method === 'GET' && p === '/nics') {
      const owner = this.ignoreFilters ? null : q.get('belongs_to_uuid');
      return { status: 200, body: [...this.nics.values()].filter((n) => !owner || n.belongs_to_uuid === owner) };
    }
    if (r.method === 'POST' && p === '/networks/admin/nics') {
      const b = r.body as Record<string, unknown>;
      const mac = String(b.mac);
      const nic = { ...b, ip: `10.99.99.${this.nextIp++}`, netmask: '255.255.255.0', nic_tag: 'admin', primary: false };
      this.nics.set(mac.replace(/:/g, ''), nic);
      return { status: 200, body: nic };
    }
    return { status: 404, body: { code: 'ResourceNotFound', message: `${r.method} ${p} not found` } };
  }
}

/** A VM's etag: its content's digest, so any change of it (by a test, too) changes it. */
function vmEtag(vm: Record<string, unknown>): string {
  return `"${createHash('sha1').update(JSON.stringify(vm)).digest('hex')}"`;
}
