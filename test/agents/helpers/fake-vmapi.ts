/**
 * A recording stand-in for the three VMAPI routes vm-agent uses, with VMAPI's semantics where
 * vm-agent can see them: `GET /vms?server_uuid&state=active` (not destroyed / failed; limit and
 * offset, limit capped at 1000), `PUT /vms?server_uuid` `{vms}` (409 ValidationFailed without
 * server_uuid or vms), `PUT /vms/:uuid`. It records every request with its headers, can answer
 * 503 for a while, and can be "restarted empty". Loopback, port 0.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export class FakeVmapi {
  readonly vms = new Map<string, Record<string, unknown>>();
  readonly requests: Recorded[] = [];
  /** Answer this many requests with 503 (VMAPI's "Workflow API is unavailable"). */
  failNext = 0;
  /** While true, every request gets 503. */
  down = false;
  /** Requests for these servers (by User-Agent `server/<uuid>`) get 503. */
  readonly failServers = new Set<string>();
  /** Each answer waits this long (to observe concurrency). */
  delayMs = 0;
  /** While set, every request waits for it before it is answered (a VMAPI that is slow for as long as a test needs). */
  hold: Promise<void> | undefined;
  /** Most requests in flight at once, per server (from the User-Agent). */
  readonly maxInFlight = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  private server: http.Server | undefined;
  url = '';

  async start(port = 0): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }

  /** Lose every VM, as a VMAPI whose database was wiped. */
  wipe(): void {
    this.vms.clear();
  }

  puts(): Recorded[] {
    return this.requests.filter((r) => r.method === 'PUT');
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://vmapi');
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    this.requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body });
    const server = /server\/([0-9a-f-]{36})/.exec(String(req.headers['user-agent'] ?? ''))?.[1] ?? '';
    const now = (this.inFlight.get(server) ?? 0) + 1;
    this.inFlight.set(server, now);
    this.maxInFlight.set(server, Math.max(now, this.maxInFlight.get(server) ?? 0));
    try {
      if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
      if (this.hold) await this.hold;
      this.answer(req, res, url, body, server);
    } finally {
      this.inFlight.set(server, (this.inFlight.get(server) ?? 1) - 1);
    }
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: unknown, uaServer: string): void {
    const send = (status: number, payload?: unknown): void => {
      const out = payload === undefined ? '' : JSON.stringify(payload);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
      res.end(out);
    };
    if (this.down || this.failNext > 0 || this.failServers.has(uaServer)) {
      if (this.failNext > 0) this.failNext--;
      send(503, { code: 'ServiceUnavailableError', message: 'Workflow API is unavailable' });
      return;
    }
    if (req.method === 'GET' && url.pathname === '/vms') {
      const server = url.searchParams.get('server_uuid');
      const state = url.searchParams.get('state');
      const limit = Math.min(1000, Number(url.searchParams.get('limit') ?? 1000));
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const all = [...this.vms.values()].filter(
        (v) => (!server || v.server_uuid === server) && (state !== 'active' || (v.state !== 'destroyed' && v.state !== 'failed')),
      );
      send(200, all.slice(offset, offset + limit));
      return;
    }
    if (req.method === 'PUT' && url.pathname === '/vms') {
      const server = url.searchParams.get('server_uuid');
      const vms = (body as { vms?: unknown } | undefined)?.vms;
      if (!server || !vms || typeof vms !== 'object') {
        send(409, { code: 'ValidationFailed', message: 'Invalid Parameters', errors: [{ field: server ? 'vms' : 'server_uuid', code: 'MissingParameter' }] });
        return;
      }
      for (const [uuid, vm] of Object.entries(vms as Record<string, Record<string, unknown>>)) this.vms.set(uuid, { ...vm, uuid });
      send(200);
      return;
    }
    const m = /^\/vms\/([0-9a-f-]{36})$/.exec(url.pathname);
    if (req.method === 'PUT' && m) {
      const vm: Record<string, unknown> = { ...(body as Record<string, unknown>), uuid: m[1]! };
      if (vm.state === 'destroyed') vm.destroyed = new Date().toISOString();
      this.vms.set(m[1]!, vm);
      send(200, vm);
      return;
    }
    send(404, { code: 'ResourceNotFound', message: `${req.method} ${url.pathname} does not exist` });
  }
}
