/**
 * The fleet page's own listener (`--ui-address`, 127.0.0.1 with a free port by default):
 *
 *   GET    /                       the page (src/ui/page, served from the install: no build step, no CDN)
 *   GET    /<file>                 its scripts and styles; /vendor/uPlot.* from node_modules/uplot
 *   GET    /feed                   websocket: the live feed (feed.ts): a snapshot, then a delta per second
 *   GET    /api/servers/:uuid      one CN's detail (detail.ts)
 *   GET    /api/events             the active events (as the control API's GET /events)
 *   GET    /api/boots              the latest boot storm's summary (docs/boot.md)
 *   POST   /api/events             start one: the control API's own POST /events handler, same validation
 *   DELETE /api/events/:id         end one
 *
 * Its buttons call the daemon's events through this listener rather than the control API, so
 * the control API stays on 127.0.0.1 and answers only loopback Host names. On a loopback
 * address this listener keeps the same rule (no DNS rebinding). Whatever the address, a
 * request that changes something (POST, DELETE) and the websocket must come from the page's own
 * origin (an Origin header naming another site is refused) with a JSON body (a form cannot
 * send one). Exposed on another address (`--ui-address 0.0.0.0:8090`), whoever reaches it
 * sees the fleet and can start and end events: docs/ui.md says so.
 */
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import { capMessage, ConnectionGuard } from '../common/connection-guard.js';
import { MockcloudError, toMockcloudError } from '../common/errors.js';
import { readJsonBody } from '../common/json-body.js';
import type { Logger } from '../common/log.js';
import { isUuid } from '../common/uuid.js';
import type { Scheduler } from '../runtime/scheduler.js';
import { isLoopbackHost, isLoopbackIp, listenerUrl } from '../common/listen-address.js';
import type { UiAddress } from './address.js';
import { serverDetail } from './detail.js';
import { FleetFeed } from './feed.js';
import type { FleetSource } from './source.js';

const require = createRequire(import.meta.url);
const MAX_BODY_BYTES = 64 * 1024;
/** A page that does not keep up (a stopped tab over a slow link) is dropped, not buffered for. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/**
 * The page sends nothing on its feed: a message past this (a frame's declared length) closes
 * the connection with 1009 (message too big) before any of it is buffered.
 */
export const MAX_FEED_MESSAGE_BYTES = 4 * 1024;
/** Open connections to the page's listener (its feeds among them); see connection-guard.ts. */
const MAX_CONNECTIONS = 1024;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The page's folder: beside this module (dist/src/ui/page, copied by the build; src/ui/page in tests). */
export function pageDir(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), 'page');
}

export interface UiServerOptions {
  source: FleetSource;
  scheduler: Scheduler;
  log: Logger;
  address: UiAddress;
}

interface Asset {
  type: string;
  body: Buffer;
}

export class UiServer {
  readonly feed: FleetFeed;
  private server: http.Server | undefined;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_FEED_MESSAGE_BYTES });
  private readonly connections: ConnectionGuard;
  private readonly assets = new Map<string, Asset>();
  private addr: AddressInfo | undefined;

  constructor(private readonly opts: UiServerOptions) {
    this.feed = new FleetFeed(opts.source, opts.scheduler, opts.log);
    this.connections = new ConnectionGuard(
      { maxConnections: MAX_CONNECTIONS },
      { onCap: (report) => opts.log.warn({ connections: report }, capMessage('the fleet page', report)) },
    );
  }

  get address(): { ip: string; port: number; url: string } {
    if (!this.addr) throw new Error('fleet page not started');
    return { ip: this.opts.address.ip, port: this.addr.port, url: listenerUrl(this.opts.address.ip, this.addr.port) };
  }

  async start(): Promise<void> {
    await this.loadAssets();
    const server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.fail(res, err));
    });
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
    server.keepAliveTimeout = 5000;
    this.connections.watch(server);
    this.connections.start();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: this.opts.address.ip, port: this.opts.address.port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.addr = server.address() as AddressInfo;
    this.feed.start();
  }

  async stop(): Promise<void> {
    this.connections.stop();
    this.feed.stop();
    for (const ws of this.wss.clients) ws.terminate();
    this.wss.close();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  /** The page's files, read once: they are small and never change while the daemon runs. */
  private async loadAssets(): Promise<void> {
    const dir = pageDir();
    for (const name of await fsp.readdir(dir)) {
      const type = TYPES[path.extname(name)];
      if (type) this.assets.set(`/${name}`, { type, body: await fsp.readFile(path.join(dir, name)) });
    }
    const index = this.assets.get('/index.html');
    if (!index) throw new Error(`the fleet page is missing: no index.html in ${dir}`);
    this.assets.set('/', index);
    const uplot = path.join(path.dirname(require.resolve('uplot/package.json')), 'dist');
    this.assets.set('/vendor/uPlot.esm.js', { type: TYPES['.js']!, body: await fsp.readFile(path.join(uplot, 'uPlot.esm.js')) });
    this.assets.set('/vendor/uPlot.min.css', { type: TYPES['.css']!, body: await fsp.readFile(path.join(uplot, 'uPlot.min.css')) });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.checkHost(req);
    const p = pathOf(req.url);
    const method = req.method ?? 'GET';
    if (p.startsWith('/api/')) {
      if (method !== 'GET' && method !== 'HEAD') checkSameOrigin(req, true);
      const segs = p.split('/').filter(Boolean).slice(1).map(segment);
      if (segs[0] === 'servers' && segs.length === 2 && method === 'GET') {
        const uuid = segs[1]!;
        if (!isUuid(uuid)) throw new MockcloudError('InvalidArgument', `${JSON.stringify(uuid)} is not a server UUID`);
        return sendJson(res, 200, await serverDetail(this.opts.source, uuid.toLowerCase()));
      }
      if (segs[0] === 'events' && segs.length === 1) {
        if (method === 'GET') return sendJson(res, 200, { active: this.opts.source.activeEvents() });
        if (method === 'POST') return sendJson(res, 201, await this.opts.source.startEvent(fromThePage(await readJsonBody(req, MAX_BODY_BYTES))));
      }
      if (segs[0] === 'boots' && segs.length === 1 && method === 'GET') {
        return sendJson(res, 200, { summary: this.opts.source.bootSummary?.() ?? null });
      }
      if (segs[0] === 'events' && segs.length === 2 && method === 'DELETE') {
        return sendJson(res, 200, await this.opts.source.endEvent(segs[1]!));
      }
      throw new MockcloudError('ResourceNotFound', `${method} ${p} does not exist`);
    }
    const asset = this.assets.get(p);
    if (!asset) throw new MockcloudError('ResourceNotFound', `${p} is not part of the fleet page`);
    if (method !== 'GET' && method !== 'HEAD') throw new MockcloudError('MethodNotAllowed', `${method} is not allowed on ${p}`);
    res.writeHead(200, {
      'content-type': asset.type,
      'content-length': asset.body.length,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      ...(p === '/' || p === '/index.html' ? { 'content-security-policy': "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self' 'unsafe-inline'" } : {}),
    });
    res.end(method === 'HEAD' ? undefined : asset.body);
  }

  private upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    try {
      this.checkHost(req);
      checkSameOrigin(req, false);
      if (pathOf(req.url) !== '/feed') throw new MockcloudError('ResourceNotFound', 'the feed is at /feed');
    } catch (err) {
      const e = toMockcloudError(err);
      socket.end(`HTTP/1.1 ${e.statusCode} ${http.STATUS_CODES[e.statusCode] ?? ''}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n${JSON.stringify(e.toBody())}`);
      return;
    }
    this.connections.upgraded(socket);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  private accept(ws: WebSocket): void {
    const client = {
      send: (message: string): void => {
        if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
          ws.terminate();
          return;
        }
        ws.send(message);
      },
    };
    ws.on('close', () => this.feed.remove(client));
    // A message over MAX_FEED_MESSAGE_BYTES: ws closes the connection (1009) and says so here.
    ws.on('error', () => this.feed.remove(client));
    // The page only listens: what a client sends is not read.
    ws.on('message', () => undefined);
    this.feed.add(client);
  }

  /** On a loopback address, only loopback Host names (a page of another site cannot rebind to it). */
  private checkHost(req: http.IncomingMessage): void {
    if (!isLoopbackIp(this.opts.address.ip)) return;
    const host = req.headers.host;
    if (host === undefined || isLoopbackHost(host)) return;
    throw new MockcloudError('Forbidden', `the fleet page on ${this.opts.address.ip} only answers loopback requests (Host: ${host})`);
  }

  private fail(res: http.ServerResponse, err: unknown): void {
    const e = toMockcloudError(err);
    if (e.statusCode >= 500) this.opts.log.warn({ err }, 'fleet page request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendJson(res, e.statusCode, e.toBody());
  }
}

/**
 * A request from a browser names its page's origin: it must be this one. A websocket must come
 * from a browser (an Origin); a change may also come from a script (no Origin) but as JSON.
 */
function checkSameOrigin(req: http.IncomingMessage, change: boolean): void {
  const origin = req.headers.origin;
  const host = req.headers.host ?? '';
  // https: the page behind a TLS-terminating proxy that keeps the Host.
  if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}`) {
    throw new MockcloudError('Forbidden', `requests from ${origin} are refused: only the fleet page itself may ask`);
  }
  if (change && !/^application\/json\b/i.test(req.headers['content-type'] ?? '') && req.method === 'POST') {
    throw new MockcloudError('UnsupportedMediaType', 'the body must be JSON (content-type: application/json)');
  }
}

/**
 * An event the page's buttons start says so (docs/events.md): `source.via: "fleet page"`, set
 * here whatever the request said, so that nothing through this listener passes for a scenario.
 * It counts as an API event (the metrics' `source="api"`).
 */
function fromThePage(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return { ...(body as Record<string, unknown>), source: { via: 'fleet page' } };
}

/**
 * The request's path. Prefixed, not resolved against a base: `//` or `//x` would read as a URL
 * with a host (or fail as one without), where a client means a path.
 */
function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  try {
    return new URL(u.startsWith('/') ? `http://page${u}` : u).pathname;
  } catch {
    throw new MockcloudError('BadRequest', `bad request URL ${JSON.stringify(u.slice(0, 200))}`);
  }
}

/** A path segment, decoded; one that is not valid percent-encoding is the client's error. */
function segment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new MockcloudError('BadRequest', `bad path segment ${JSON.stringify(s)}`);
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}
