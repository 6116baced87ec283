/**
 * The loopback-only control API the `mockcloud` CLI talks to: JSON over HTTP on
 * 127.0.0.1:<control-port> (0 = ephemeral; daemon.json says which).
 *
 *   GET    /ping                      {pid, state}
 *   GET    /status                    CN count, heartbeats/s, tasks in flight, errors by kind, ...
 *   GET    /config                    the resolved configuration and where each value came from
 *   GET    /profiles                  the hardware profiles create-servers accepts
 *   GET    /servers                   every mock CN (uuid, hostname, admin IP, agent address, VMs)
 *   POST   /servers                   {count, profile? | mix?, seed?, placement?, hostnamePrefix?} → {created, errors}
 *                                      or one CN as given: {count: 1, uuid?, hostname?, hardware? (a profile file's keys)}
 *   GET    /servers/:uuid             one CN, with sysinfo and agents
 *   DELETE /servers/:uuid             stop and delete a CN (CNAPI/NAPI cleanup best effort)
 *   POST   /servers/:uuid/rescan      re-read the CN's VM files and sysinfo.json (hand edits)
 *   POST   /servers/:uuid/placement   {traits?, reserved?, reservoir?, overprovisionRatios?}: set in CNAPI
 *   POST   /rescan                    the same for every CN
 *   GET    /faults                    cn-agent task fault rules (src/agents/cn-agent/faults.ts)
 *   POST   /faults                    add one: {server?, task?, delayMs?, error?, probability?}
 *   DELETE /faults[?server=UUID]      remove all (of one CN)
 *   DELETE /faults/:id                remove one
 *   GET    /events                    active fault events (src/events, docs/events.md)
 *   POST   /events                    start one: {type, target, durationMs?, params?, seed?, source?} → 201
 *   DELETE /events                    end every active event
 *   DELETE /events/:id                end one (undo what it set)
 *   POST   /events/marks              {label, source?}: a mark line in <data-dir>/events.jsonl
 *   GET    /timing                    the timing profile in force and events' adjustments (docs/timing.md)
 *   PUT    /timing                    {name} | {file} | {yaml, name?}: the daemon's timing (400, and unchanged, if bad)
 *   GET    /metrics                   Prometheus text (docs/metrics.md); also on --metrics-address
 *
 * Errors are Triton-style `{"code","message"}` with the catalogue's status.
 *
 * On restify through the helpers every other surface uses (src/headnode/http.ts), keeping
 * what the CLI and scripts rely on: only loopback Host names are served; a body is JSON
 * whatever its Content-Type (curl -d, fetch with a string body), at most 64 KiB (413
 * RequestEntityTooLarge), read before routing; the path is read as WHATWG URL reads it,
 * empty segments dropped (`/servers/` is `/servers`); a 404 or 405 names the method and the
 * path; a bad server UUID is a 409 whatever the method.
 */
import { promises as fsp } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { capMessage, ConnectionGuard } from '../common/connection-guard.js';
import { MockcloudError } from '../common/errors.js';
import { readJsonBody } from '../common/json-body.js';
import type { Logger } from '../common/log.js';
import { isLoopbackHost } from '../common/listen-address.js';
import { isUuid } from '../common/uuid.js';
import { body, closeServer, createServer, KEEP_ALIVE_MS, listen, route, sendError, type Req, type Res, type RestifyServer } from '../headnode/http.js';

export const CONTROL_IP = '127.0.0.1';
const MAX_BODY_BYTES = 64 * 1024;
/** The CLI's own way in: `<data-dir>/control.sock`, owner only (see ControlApi.start). */
export const CONTROL_SOCKET = 'control.sock';
/**
 * Connections to the CLI's socket at most: only the daemon's user can open it, and the CLI
 * opens one or a few at a time (fleet commands send 16 requests at once).
 */
export const MAX_CLI_SOCKET_CONNECTIONS = 256;

/** A Unix socket path is at most 107 bytes (sun_path); a longer data dir goes without one. */
const MAX_SOCKET_PATH = 100;

export interface ControlResponse {
  status?: number;
  body?: unknown;
  /** Sent as it is instead of a JSON body (the Prometheus text of /metrics). */
  text?: { contentType: string; body: string };
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
  setPlacement(uuid: string, body: unknown): Promise<unknown>;
  rescanAll(): Promise<unknown>;
  listFaults(): unknown;
  setFault(body: unknown): unknown;
  clearFaults(server: string | undefined): unknown;
  removeFault(id: string): unknown;
  listEvents(): unknown;
  startEvent(body: unknown): Promise<unknown>;
  endEvent(id: string): Promise<unknown>;
  endAllEvents(): Promise<unknown>;
  markEvents(body: unknown): Promise<unknown>;
  /** The Prometheus text of the daemon's metrics (absent: no /metrics). */
  metrics?(): Promise<ControlResponse['text']>;
  /** The timing in force (absent: no /timing). */
  timing?(): unknown;
  setTiming?(body: unknown): Promise<unknown>;
  /**
   * What one CN's agents hold: `config-agent` (its instances, files, post_cmds), `firewall`
   * (the fwadm store: rules, remote VMs), `fwadm` (what `fwadm <cmd>` prints there, as text).
   */
  serverAgent?(uuid: string, what: string, query: URLSearchParams): ControlResponse;
  /** Each CN's last boot and their summary (docs/boot.md); absent: no /boots. */
  boots?(query: URLSearchParams): unknown;
}

/** What one path answers, by method; any other method is a 405. */
type MethodTable = Partial<Record<'GET' | 'POST' | 'PUT' | 'DELETE', (req: Req) => Promise<ControlResponse>>>;

/** Every method restify routes: each path answers all of them, so the 405 is ours. */
export const METHODS = ['get', 'head', 'post', 'put', 'patch', 'del', 'opts'] as const;

export interface ControlApiOptions {
  port?: number;
  /** Open connections at most (1024 by default; a sixteenth kept for requests, such as the CLI's). */
  maxConnections?: number;
  /** Where the CLI's own socket goes (`<data-dir>/control.sock`); none when absent or too long. */
  socketPath?: string;
}

export class ControlApi {
  private server: RestifyServer | undefined;
  private addr: AddressInfo | undefined;
  private unix: net.Server | undefined;
  private unixGuard: ConnectionGuard | undefined;
  private socketPath: string | undefined;

  constructor(
    private readonly handlers: ControlHandlers,
    private readonly log: Logger,
    private readonly opts: ControlApiOptions = {},
  ) {}

  get address(): { ip: string; port: number; url: string; socket?: string } {
    if (!this.addr) throw new Error('control API not started');
    return { ip: CONTROL_IP, port: this.addr.port, url: `http://${CONTROL_IP}:${this.addr.port}`, ...(this.socketPath ? { socket: this.socketPath } : {}) };
  }

  async start(): Promise<void> {
    // A server UUID of any length is a 409, not a path no route matches.
    const server = createServer({
      name: 'mockcloud-control',
      log: this.log,
      parseBody: false,
      maxParamLength: 8 * 1024,
      ...(this.opts.maxConnections !== undefined ? { connectionLimits: { maxConnections: this.opts.maxConnections } } : {}),
    });
    server.pre((req, res, next) => {
      res.setHeader('cache-control', 'no-store');
      admit(req).then(
        () => next(),
        (err: unknown) => {
          sendError(res, err, this.log);
          next(false);
        },
      );
    });
    answerUnrouted(server, this.log);
    this.mount(server);
    await listen(server, CONTROL_IP, this.opts.port ?? 0);
    this.server = server;
    this.addr = server.server.address() as AddressInfo;
    await this.listenUnix(server);
  }

  /**
   * The reserve of the CLI's own requests: the same API on a Unix socket in the data dir that
   * only the daemon's user may open (0600). A flood of the TCP port (any local process, or
   * whoever reaches it) fills that port's accept queue and slots; the CLI's requests take this
   * way in and are not queued behind it. Where it cannot be made, the CLI uses the TCP port.
   */
  private async listenUnix(server: RestifyServer): Promise<void> {
    const file = this.opts.socketPath;
    if (!file || Buffer.byteLength(file) > MAX_SOCKET_PATH) return;
    // A socket file an earlier run left (a live daemon on this data dir was refused before).
    await fsp.rm(file, { force: true });
    // Its own guard: the TCP port's flood sheds that port's connections, never the CLI's; the
    // deadlines are the same (a stuck CLI still lets go of its descriptor). It takes only the
    // socket's connections (at accept): the TCP port's are its guard's alone.
    const guard = new ConnectionGuard(
      { idleTimeoutMs: KEEP_ALIVE_MS, maxConnections: MAX_CLI_SOCKET_CONNECTIONS },
      { onCap: (report) => this.log.warn({ connections: report, listener: 'mockcloud-control-socket' }, capMessage('mockcloud-control-socket', report)) },
    );
    guard.watch(server.server, { admitNew: false });
    const unix = net.createServer((sock) => {
      if (guard.admit(sock)) server.server.emit('connection', sock);
    });
    const umask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        unix.once('error', reject);
        unix.listen(file, () => {
          unix.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      this.log.warn({ err, socket: file }, 'cannot listen on the control socket; the CLI uses the TCP port');
      return;
    } finally {
      process.umask(umask);
    }
    guard.start();
    this.unixGuard = guard;
    this.unix = unix;
    this.socketPath = file;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const unix = this.unix;
    this.unix = undefined;
    if (unix) await new Promise<void>((resolve) => unix.close(() => resolve()));
    this.unixGuard?.stop();
    this.unixGuard = undefined;
    if (this.socketPath) await fsp.rm(this.socketPath, { force: true });
    await closeServer(server);
  }

  private mount(server: RestifyServer): void {
    const h = this.handlers;
    const answer =
      (fn: (req: Req) => unknown) =>
      async (req: Req): Promise<ControlResponse> => ({ body: await fn(req) });
    const serverUuid = (req: Req): string => {
      const uuid = String(req.params.uuid);
      if (!isUuid(uuid)) throw new MockcloudError('InvalidArgument', `${JSON.stringify(uuid)} is not a server UUID`);
      return uuid;
    };
    const on = (path: string, table: (req: Req) => MethodTable): void => {
      const handler = route(this.log, async (req, res) => {
        const fn = table(req)[req.method as keyof MethodTable];
        if (!fn) throw methodNotAllowed(req);
        const out = await fn(req);
        const status = out.status ?? 200;
        if (out.text !== undefined) return sendText(res, status, out.text);
        if (out.body !== undefined) return { status, body: out.body };
        // Nothing to say (a delete): an empty JSON answer, as restify's send(status) is not.
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': 0 });
        res.end();
      });
      for (const m of METHODS) server[m](path, handler);
    };

    on('/ping', () => ({ GET: answer(() => h.ping()) }));
    const metrics = h.metrics?.bind(h);
    if (metrics) on('/metrics', () => ({ GET: async () => ({ text: await metrics() }) }));
    on('/status', () => ({ GET: answer(() => h.status()) }));
    const { timing, setTiming } = h;
    if (timing && setTiming) {
      on('/timing', () => ({ GET: answer(() => timing.call(h)), PUT: answer((req) => setTiming.call(h, body(req))) }));
    }
    const boots = h.boots?.bind(h);
    if (boots) on('/boots', () => ({ GET: answer((req) => boots(new URLSearchParams(req.getQuery()))) }));
    on('/config', () => ({ GET: answer(() => h.config()) }));
    on('/profiles', () => ({ GET: answer(() => h.profiles()) }));
    on('/rescan', () => ({ POST: answer(() => h.rescanAll()) }));
    on('/faults', () => ({
      GET: answer(() => h.listFaults()),
      POST: answer((req) => h.setFault(body(req))),
      DELETE: answer((req) => {
        const server = new URLSearchParams(req.getQuery()).get('server') ?? undefined;
        if (server !== undefined && !isUuid(server)) throw new MockcloudError('InvalidArgument', `${JSON.stringify(server)} is not a server UUID`);
        return h.clearFaults(server);
      }),
    }));
    on('/faults/:id', () => ({ DELETE: answer((req) => h.removeFault(String(req.params.id))) }));
    on('/events', () => ({
      GET: answer(() => h.listEvents()),
      POST: async (req) => ({ status: 201, body: await h.startEvent(body(req)) }),
      DELETE: answer(() => h.endAllEvents()),
    }));
    on('/events/marks', () => ({ POST: async (req) => ({ status: 201, body: await h.markEvents(body(req)) }) }));
    on('/events/:id', () => ({ DELETE: answer((req) => h.endEvent(String(req.params.id))) }));
    on('/servers', () => ({
      GET: answer(() => h.listServers()),
      POST: (req) => h.createServers(body(req)),
    }));
    on('/servers/:uuid', (req) => {
      const uuid = serverUuid(req);
      return { GET: answer(() => h.getServer(uuid)), DELETE: answer(() => h.deleteServer(uuid)) };
    });
    on('/servers/:uuid/:action', (req) => {
      const uuid = serverUuid(req);
      if (req.params.action === 'placement') return { POST: answer((r) => h.setPlacement(uuid, body(r))) };
      const agent = h.serverAgent?.bind(h);
      if (agent && ['config-agent', 'firewall', 'fwadm'].includes(String(req.params.action))) {
        return { GET: async (r) => agent(uuid, String(r.params.action), new URLSearchParams(r.getQuery())) };
      }
      if (req.params.action !== 'rescan') throw notFound(req);
      return { POST: answer(() => h.rescanServer(uuid)) };
    });
  }
}

/** restify's router answers a path no route has, or a method no route takes, itself: the messages are ours. */
export function answerUnrouted(server: RestifyServer, log: Logger): void {
  server.on('NotFound', (req: Req, res: Res, _err: unknown, done: () => void) => {
    sendError(res, notFound(req), log);
    done();
  });
  server.on('MethodNotAllowed', (req: Req, res: Res, _err: unknown, done: () => void) => {
    res.removeHeader('allow');
    sendError(res, methodNotAllowed(req), log);
    done();
  });
}

/** A text answer as it is (restify would format a string body as JSON). */
export function sendText(res: Res, status: number, text: { contentType: string; body: string }): void {
  res.writeHead(status, { 'content-type': text.contentType, 'content-length': Buffer.byteLength(text.body) });
  res.end(text.body);
}

/** Before routing: the Host check, the path, the body (a bad Host or body is answered before any 404). */
async function admit(req: Req): Promise<void> {
  checkHost(req.headers.host);
  req.url = canonicalUrl(req.url ?? '/');
  (req as { body?: unknown }).body = await readJsonBody(req, MAX_BODY_BYTES);
}

export function notFound(req: Req): MockcloudError {
  return new MockcloudError('ResourceNotFound', `${req.method} ${pathOf(req)} does not exist`);
}

export function methodNotAllowed(req: Req): MockcloudError {
  return new MockcloudError('MethodNotAllowed', `${req.method} is not allowed on ${pathOf(req)}`);
}

/** The request's path, decoded, as the messages name it. */
function pathOf(req: Req): string {
  return `/${segmentsOf(req.getPath()).map((s) => decodeURIComponent(s)).join('/')}`;
}

function segmentsOf(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

/** The URL as WHATWG URL reads it, without empty path segments; a segment that does not decode is a 400. */
export function canonicalUrl(url: string): string {
  let u: URL;
  try {
    // Prefixed, not resolved against a base: `//x` would otherwise read as a host named x.
    u = new URL(url.startsWith('/') ? `http://control${url}` : url);
  } catch {
    throw new MockcloudError('BadRequest', `bad request URL ${JSON.stringify(url.slice(0, 200))}`);
  }
  const segments = segmentsOf(u.pathname);
  for (const s of segments) {
    try {
      decodeURIComponent(s);
    } catch {
      throw new MockcloudError('BadRequest', `bad path segment ${JSON.stringify(s)}`);
    }
  }
  return `/${segments.join('/')}${u.search}`;
}

/** Only loopback names: a web page in a browser cannot drive the daemon (DNS rebinding). */
function checkHost(host: string | undefined): void {
  if (host === undefined || isLoopbackHost(host)) return;
  throw new MockcloudError('Forbidden', `the control API only answers loopback requests (Host: ${host})`);
}
