/**
 * The loopback-only control API the `mockcloud` CLI talks to: JSON over HTTP on
 * 127.0.0.1:<control-port> (0 = ephemeral; daemon.json says which).
 *
 *   GET    /ping                      {pid, state}
 *   GET    /status                    CN count, heartbeats/s, tasks in flight, errors by kind, ...
 *   GET    /config                    the resolved configuration and where each value came from
 *   GET    /profiles                  the hardware profiles create-servers accepts
 *   GET    /servers                   every mock CN (uuid, hostname, admin IP, agent address, VMs)
 *   POST   /servers                   {count, profile?, hostnamePrefix?} → {created, errors}
 *   GET    /servers/:uuid             one CN, with sysinfo and agents
 *   DELETE /servers/:uuid             stop and delete a CN (CNAPI/NAPI cleanup best effort)
 *   POST   /servers/:uuid/rescan      re-read the CN's VM files and sysinfo.json (hand edits)
 *   POST   /rescan                    the same for every CN
 *   GET    /faults                    cn-agent task fault rules (src/agents/cn-agent/faults.ts)
 *   POST   /faults                    add one: {server?, task?, delayMs?, error?, probability?}
 *   DELETE /faults[?server=UUID]      remove all (of one CN)
 *   DELETE /faults/:id                remove one
 *
 * Errors are Triton-style `{"code","message"}` with the catalogue's status.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockcloudError, toMockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { isUuid } from '../common/uuid.js';

export const CONTROL_IP = '127.0.0.1';
const MAX_BODY_BYTES = 64 * 1024;

export interface ControlRequest {
  method: string;
  /** Path segments after the leading slash, e.g. ['servers', '<uuid>', 'rescan']. */
  segments: string[];
  query: URLSearchParams;
  body: unknown;
}

export interface ControlResponse {
  status?: number;
  body?: unknown;
}

/** What the daemon answers; the API layer only parses, routes and formats. */
export interface ControlHandlers {
  ping(): unknown;
  status(): unknown;
  config(): unknown;
  profiles(): unknown;
  listServers(): unknown;
  getServer(uuid: string): unknown;
  createServers(body: unknown): Promise<ControlResponse>;
  deleteServer(uuid: string): Promise<unknown>;
  rescanServer(uuid: string): Promise<unknown>;
  rescanAll(): Promise<unknown>;
  listFaults(): unknown;
  setFault(body: unknown): unknown;
  clearFaults(server: string | undefined): unknown;
  removeFault(id: string): unknown;
}

export class ControlApi {
  private server: http.Server | undefined;
  private addr: AddressInfo | undefined;
  private readonly sockets = new Set<import('node:net').Socket>();

  constructor(
    private readonly handlers: ControlHandlers,
    private readonly log: Logger,
    private readonly port = 0,
  ) {}

  get address(): { ip: string; port: number; url: string } {
    if (!this.addr) throw new Error('control API not started');
    return { ip: CONTROL_IP, port: this.addr.port, url: `http://${CONTROL_IP}:${this.addr.port}` };
  }

  async start(): Promise<void> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, CONTROL_IP, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.addr = server.address() as AddressInfo;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let status = 200;
    let body: unknown;
    try {
      checkHost(req.headers.host);
      const url = new URL(req.url ?? '/', 'http://control');
      const segments = url.pathname.split('/').filter((s) => s.length > 0).map(decodeSegment);
      const parsed = await readJsonBody(req);
      const out = await this.route({ method: req.method ?? 'GET', segments, query: url.searchParams, body: parsed });
      status = out.status ?? 200;
      body = out.body;
    } catch (err) {
      const e = toMockcloudError(err);
      if (e.statusCode >= 500) this.log.error({ err: e }, 'control API request failed');
      status = e.statusCode;
      body = e.toBody();
    }
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
    });
    res.end(text);
  }

  private async route(r: ControlRequest): Promise<ControlResponse> {
    const h = this.handlers;
    const [first, uuid, action, ...rest] = r.segments;
    const only = (method: string, fn: () => unknown | Promise<unknown>): Promise<ControlResponse> => {
      if (r.method !== method) throw methodNotAllowed(r.method, `/${r.segments.join('/')}`);
      return Promise.resolve(fn()).then((body) => ({ body }));
    };
    if (r.segments.length === 1) {
      switch (first) {
        case 'ping':
          return only('GET', () => h.ping());
        case 'status':
          return only('GET', () => h.status());
        case 'config':
          return only('GET', () => h.config());
        case 'profiles':
          return only('GET', () => h.profiles());
        case 'rescan':
          return only('POST', () => h.rescanAll());
        case 'faults': {
          if (r.method === 'GET') return { body: h.listFaults() };
          if (r.method === 'POST') return { body: h.setFault(r.body) };
          if (r.method === 'DELETE') {
            const server = r.query.get('server') ?? undefined;
            if (server !== undefined && !isUuid(server)) throw new MockcloudError('InvalidArgument', `${JSON.stringify(server)} is not a server UUID`);
            return { body: h.clearFaults(server) };
          }
          throw methodNotAllowed(r.method, '/faults');
        }
        case 'servers':
          if (r.method === 'GET') return { body: h.listServers() };
          if (r.method === 'POST') return h.createServers(r.body);
          throw methodNotAllowed(r.method, '/servers');
      }
    }
    if (first === 'faults' && uuid !== undefined && action === undefined) {
      return only('DELETE', () => h.removeFault(uuid));
    }
    if (first === 'servers' && uuid !== undefined && rest.length === 0) {
      if (!isUuid(uuid)) throw new MockcloudError('InvalidArgument', `${JSON.stringify(uuid)} is not a server UUID`);
      if (action === undefined) {
        if (r.method === 'GET') return { body: h.getServer(uuid) };
        if (r.method === 'DELETE') return { body: await h.deleteServer(uuid) };
        throw methodNotAllowed(r.method, `/servers/${uuid}`);
      }
      if (action === 'rescan') return only('POST', () => h.rescanServer(uuid));
    }
    throw new MockcloudError('ResourceNotFound', `${r.method} /${r.segments.join('/')} does not exist`);
  }
}

function methodNotAllowed(method: string, path: string): MockcloudError {
  return new MockcloudError('MethodNotAllowed', `${method} is not allowed on ${path}`);
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new MockcloudError('BadRequest', `bad path segment ${JSON.stringify(s)}`);
  }
}

/** Only loopback names: a web page in a browser cannot drive the daemon (DNS rebinding). */
function checkHost(host: string | undefined): void {
  if (host === undefined) return;
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  if (name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name)) return;
  throw new MockcloudError('Forbidden', `the control API only answers loopback requests (Host: ${host})`);
}

async function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Drain the whole body even when too large, so the error reply reaches the client.
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  if (size > MAX_BODY_BYTES) {
    throw new MockcloudError('RequestEntityTooLarge', `request body is over ${MAX_BODY_BYTES} bytes`);
  }
  if (size === 0) return undefined;
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new MockcloudError('InvalidContent', `request body is not valid JSON: ${(err as Error).message}`);
  }
}
