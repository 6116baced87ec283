/**
 * The benchmark's recording sink: a stand-in CNAPI, VMAPI and NAPI on three loopback
 * listeners of one process. It answers what a mock CN sends as the real APIs would (status
 * codes, bodies, Etags) and records what the benchmark measures: per-CN registration and
 * heartbeat times (heartbeats/s, the worst gap between two heartbeats of one CN), status
 * reports, and the NAPI NIC allocations `create-servers` makes.
 *
 * Its own control routes live on the CNAPI listener under `/__sink/`:
 *   GET  /__sink/stats   counters, per-CN heartbeat summary, store sizes
 *   POST /__sink/mark    start a new heartbeat-gap window
 *   POST /__sink/reset   forget everything (between benchmark steps); ?scope=cnapi forgets
 *                        only the per-CN registration and heartbeat records (a daemon restart)
 */
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { AddressInfo, Socket } from 'node:net';
import { ChangefeedPublisher } from '../../../src/common/changefeed/publisher.js';
import { CHANGEFEED_PATH, CHANGEFEED_STATS_PATH, NAPI_CHANGEFEED_RESOURCES } from '../../../src/common/changefeed/protocol.js';
import { MockcloudError } from '../../../src/common/errors.js';
import { createQuietLogger } from '../../../src/common/log.js';
import { HeartbeatRecorder, type HeartbeatSnapshot } from './heartbeat-recorder.js';
import { errorReply, isObject, paging, rawJson, readJsonBody, Router, sendReply, type SinkReply } from './http-util.js';
import { NapiStore, type Nic } from './napi-store.js';
import { VmapiStore } from './vmapi-store.js';

export type SinkService = 'cnapi' | 'vmapi' | 'napi';
const SERVICES: readonly SinkService[] = ['cnapi', 'vmapi', 'napi'];

export interface SinkUrls {
  cnapi: string;
  vmapi: string;
  napi: string;
}

export interface SinkStats {
  /** Epoch ms when the stats were taken. */
  at: number;
  /** Epoch ms of the last mark (0 = none since start or reset). */
  markAt: number;
  /** Requests by counter name (`cnapi.heartbeat`, `napi.nic.create`, `vmapi.status.4xx`, ...). */
  counters: Record<string, number>;
  cns: HeartbeatSnapshot;
  store: { nics: number; vms: number; activeVms: number; changefeedListeners: number };
  /** The last few requests no route matched (unexpected traffic worth a look). */
  unknownRoutes: string[];
  rssBytes: number;
  /**
   * The sink's own event loop's worst delay since the mark: a heartbeat is timed when the sink
   * reads it, so a busy sink adds this much to the gaps it records.
   */
  loopDelayMaxMs: number;
}

export class RecordingSink {
  readonly heartbeats = new HeartbeatRecorder();
  readonly napi = new NapiStore();
  readonly vmapi = new VmapiStore();
  /** Each CN's last sysinfo, for CNAPI's ServerList (`mockcloud mirror capture` reads it). */
  private readonly sysinfos = new Map<string, Record<string, unknown>>();
  private counters: Record<string, number> = {};
  private unknown: string[] = [];
  private readonly servers = new Map<SinkService, http.Server>();
  private readonly sockets = new Set<Socket>();
  /** NAPI's changefeed: net-agent registers and bootstraps; the sink publishes nothing. */
  private readonly changefeed = new ChangefeedPublisher({
    log: createQuietLogger('sink'),
    resources: NAPI_CHANGEFEED_RESOURCES,
    onConnect: () => this.count('napi.changefeed.connect'),
  });
  private readonly routers: Record<SinkService, Router>;
  private urlsValue: SinkUrls | undefined;
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 20 });

  constructor(private readonly bindIp = '127.0.0.1') {
    this.routers = { cnapi: this.cnapiRoutes(), vmapi: this.vmapiRoutes(), napi: this.napiRoutes() };
  }

  get urls(): SinkUrls {
    if (!this.urlsValue) throw new Error('sink not started');
    return this.urlsValue;
  }

  async start(): Promise<SinkUrls> {
    const urls: Partial<SinkUrls> = {};
    for (const service of SERVICES) {
      const server = http.createServer((req, res) => void this.handle(service, req, res));
      // Thousands of CNs share the daemon's keep-alive sockets: keep them open between beats.
      server.keepAliveTimeout = 65_000;
      server.headersTimeout = 70_000;
      server.on('connection', (s: Socket) => {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
      });
      if (service === 'napi') server.on('upgrade', (req, socket, head) => this.upgrade(req, socket as Socket, head));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, this.bindIp, () => {
          server.off('error', reject);
          resolve();
        });
      });
      this.servers.set(service, server);
      urls[service] = `http://${this.bindIp}:${(server.address() as AddressInfo).port}`;
    }
    this.urlsValue = urls as SinkUrls;
    this.loopDelay.enable();
    return this.urlsValue;
  }

  async stop(): Promise<void> {
    this.loopDelay.disable();
    this.changefeed.close();
    // Keep-alive connections from the daemon would hold close() open: drop them all.
    const closed = [...this.servers.values()].map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );
    for (const s of this.sockets) s.destroy();
    await Promise.all(closed);
    this.servers.clear();
  }

  stats(now = Date.now()): SinkStats {
    return {
      at: now,
      markAt: this.heartbeats.markedAt,
      counters: { ...this.counters },
      cns: this.heartbeats.snapshot(now),
      store: {
        nics: this.napi.nicCount,
        vms: this.vmapi.size,
        activeVms: this.vmapi.active,
        changefeedListeners: this.changefeed.listeners,
      },
      unknownRoutes: [...this.unknown],
      rssBytes: process.memoryUsage().rss,
      loopDelayMaxMs: Math.round(this.loopDelay.max / 1e6),
    };
  }

  mark(now = Date.now()): void {
    this.heartbeats.mark(now);
    this.loopDelay.reset();
  }

  /**
   * Forget what was recorded. 'cnapi' forgets only the per-CN registration and heartbeat
   * records (a daemon restart over the same CNs); 'all' also the NICs, VMs and counters.
   */
  reset(scope: 'all' | 'cnapi' = 'all'): void {
    this.heartbeats.clear();
    this.sysinfos.clear();
    if (scope === 'cnapi') return;
    this.napi.clear();
    this.vmapi.clear();
    this.counters = {};
    this.unknown = [];
  }

  private count(name: string, by = 1): void {
    this.counters[name] = (this.counters[name] ?? 0) + by;
  }

  private async handle(service: SinkService, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let reply: SinkReply;
    const method = req.method ?? 'GET';
    try {
      const url = new URL(req.url ?? '/', 'http://sink');
      const body = await readJsonBody(req);
      const found = this.routers[service].match(method, url.pathname);
      if (found === 'not-found' || found === 'bad-method') {
        this.noteUnknown(service, method, url.pathname);
        throw found === 'not-found'
          ? new MockcloudError('ResourceNotFound', `${url.pathname} does not exist`)
          : new MockcloudError('MethodNotAllowed', `${method} is not allowed`);
      }
      reply = await found.handler({ method, path: url.pathname, query: url.searchParams, params: found.params, headers: req.headers, body });
    } catch (err) {
      reply = errorReply(err);
    }
    this.count(`${service}.requests`);
    if (reply.status >= 400) this.count(`${service}.status.${reply.status >= 500 ? '5xx' : '4xx'}`);
    sendReply(res, reply);
  }

  private noteUnknown(service: SinkService, method: string, path: string): void {
    this.count(`${service}.unknownRoute`);
    this.unknown.push(`${service} ${method} ${path}`);
    if (this.unknown.length > 10) this.unknown.shift();
  }

  // ---- CNAPI: what cn-agent sends (consumers-spec §2)

  private cnapiRoutes(): Router {
    const r = new Router();
    const known = (uuid: string): void => {
      if (!this.heartbeats.knows(uuid)) throw new MockcloudError('ResourceNotFound', `Server ${uuid} not found`);
    };
    r.on('GET', '/ping', () => ({ status: 200, body: { ready: true, services: { moray: 'online', workflow: 'online' } } }));
    r.on('POST', '/servers/:uuid/sysinfo', (q) => {
      const uuid = q.params[0]!;
      if (!isObject(q.body) || !isObject(q.body.sysinfo)) {
        throw new MockcloudError('InvalidArgument', 'sysinfo is required and must be an object');
      }
      const unknownKeys = Object.keys(q.body).filter((k) => k !== 'sysinfo');
      if (unknownKeys.length > 0) throw new MockcloudError('InvalidArgument', `unknown parameters: ${unknownKeys.join(', ')}`);
      if (q.body.sysinfo.UUID !== uuid) throw new MockcloudError('InternalError', `sysinfo UUID does not match ${uuid}`);
      this.count('cnapi.sysinfo');
      this.heartbeats.sysinfo(uuid, Date.now());
      this.sysinfos.set(uuid, q.body.sysinfo);
      return { status: 200 };
    });
    r.on('POST', '/servers/:uuid/events/heartbeat', (q) => {
      if (q.body !== undefined && !(isObject(q.body) && Object.keys(q.body).length === 0)) {
        throw new MockcloudError('InvalidArgument', 'heartbeat takes no parameters');
      }
      this.count('cnapi.heartbeat');
      this.heartbeats.heartbeat(q.params[0]!, Date.now());
      return { status: 204 };
    });
    r.on('POST', '/servers/:uuid/events/status', (q) => {
      const uuid = q.params[0]!;
      known(uuid);
      if (!isObject(q.body)) throw new MockcloudError('InvalidArgument', 'status must be an object');
      this.count('cnapi.status');
      this.heartbeats.status(uuid);
      return { status: 204 };
    });
    r.on('POST', '/servers/:uuid', (q) => {
      known(q.params[0]!);
      if (!isObject(q.body)) throw new MockcloudError('InvalidArgument', 'body must be an object');
      if (q.body.agents !== undefined && !Array.isArray(q.body.agents)) throw new MockcloudError('InvalidArgument', 'agents must be an array');
      this.count('cnapi.serverUpdate');
      return { status: 204 };
    });
    // ServerList as CNAPI answers it (what mirror capture reads): a server per registered CN.
    r.on('GET', '/servers', (q) => {
      this.count('cnapi.listServers');
      const { offset, limit } = paging(q.query);
      return { status: 200, body: [...this.sysinfos.entries()].slice(offset, offset + limit).map(([uuid, sysinfo]) => serverOf(uuid, sysinfo)) };
    });
    r.on('GET', '/servers/:uuid', (q) => {
      const uuid = q.params[0]!;
      known(uuid);
      return { status: 200, body: { uuid, status: 'running', setup: true } };
    });
    r.on('DELETE', '/servers/:uuid', (q) => {
      const uuid = q.params[0]!;
      known(uuid);
      this.count('cnapi.serverDelete');
      this.heartbeats.forget(uuid);
      this.sysinfos.delete(uuid);
      return { status: 204 };
    });
    r.on('GET', '/__sink/stats', () => ({ status: 200, body: this.stats() }));
    r.on('POST', '/__sink/mark', () => {
      this.mark();
      return { status: 200, body: { markAt: this.heartbeats.markedAt } };
    });
    r.on('POST', '/__sink/reset', (q) => {
      const scope = q.query.get('scope') ?? 'all';
      if (scope !== 'all' && scope !== 'cnapi') throw new MockcloudError('InvalidArgument', 'scope must be all or cnapi');
      this.reset(scope);
      return { status: 204 };
    });
    return r;
  }

  // ---- VMAPI: what vm-agent sends (consumers-spec §4.1)

  private vmapiRoutes(): Router {
    const r = new Router();
    r.on('GET', '/ping', () => ({ status: 200, body: { status: 'OK', healthy: true } }));
    r.on('GET', '/vms', (q) => {
      this.count('vmapi.listVms');
      const { offset, limit } = paging(q.query);
      return rawJson(200, this.vmapi.list(q.query, offset, limit));
    });
    r.on('PUT', '/vms', (q) => {
      const n = this.vmapi.putMany(q.query.get('server_uuid'), q.body);
      this.count('vmapi.putVms');
      this.count('vmapi.vmsPut', n);
      return { status: 200, body: {} };
    });
    r.on('GET', '/vms/:uuid', (q) => {
      this.count('vmapi.getVm');
      return rawJson(200, this.vmapi.get(q.params[0]!));
    });
    r.on('PUT', '/vms/:uuid', (q) => {
      const json = this.vmapi.put(q.params[0]!, q.body, q.query.get('server_uuid') ?? undefined);
      this.count('vmapi.putVm');
      this.count('vmapi.vmsPut');
      return rawJson(200, json);
    });
    return r;
  }

  // ---- NAPI: create-servers' admin NICs and net-agent (consumers-spec §4.2)

  private napiRoutes(): Router {
    const r = new Router();
    const nicReply = (status: number, nic: Nic): SinkReply => ({
      status,
      body: NapiStore.render(nic),
      headers: { etag: nic.etag },
    });
    r.on('GET', '/ping', () => ({ status: 200, body: { healthy: true, services: { moray: 'online' }, status: 'OK' } }));
    r.on('GET', '/networks', (q) => {
      this.count('napi.listNetworks');
      return { status: 200, body: this.napi.listNetworks(q.query.get('name') ?? undefined) };
    });
    r.on('GET', '/networks/:id', (q) => {
      this.count('napi.getNetwork');
      return { status: 200, body: this.napi.network(q.params[0]!) };
    });
    r.on('POST', '/networks/:id/nics', (q) => {
      const net = this.napi.network(q.params[0]!);
      const nic = this.napi.createNic(q.body, net);
      this.count(net.name === 'admin' ? 'napi.adminNicAllocation' : 'napi.nicAllocation');
      return nicReply(200, nic);
    });
    r.on('GET', '/nics', (q) => {
      this.count('napi.listNics');
      const { offset, limit } = paging(q.query);
      return { status: 200, body: this.napi.listNics(q.query).slice(offset, offset + limit).map((n) => NapiStore.render(n)) };
    });
    r.on('POST', '/nics', (q) => {
      const nic = this.napi.createNic(q.body);
      this.count('napi.nic.create');
      return nicReply(200, nic);
    });
    r.on('GET', '/nics/:mac', (q) => {
      this.count('napi.nic.get');
      return nicReply(200, this.napi.getNic(q.params[0]!));
    });
    r.on('PUT', '/nics/:mac', (q) => {
      const nic = this.napi.updateNic(q.params[0]!, q.body);
      this.count('napi.nic.update');
      return nicReply(200, nic);
    });
    r.on('DELETE', '/nics/:mac', (q) => {
      const ifMatch = q.headers['if-match'];
      this.napi.deleteNic(q.params[0]!, Array.isArray(ifMatch) ? ifMatch[0] : ifMatch);
      this.count('napi.nic.delete');
      return { status: 204 };
    });
    r.on('GET', '/nic_tags', () => ({ status: 200, body: this.napi.listNicTags() }));
    r.on('GET', '/nic_tags/:name', (q) => {
      const tag = this.napi.listNicTags().find((t) => t.name === q.params[0]);
      if (!tag) throw new MockcloudError('ResourceNotFound', 'nic tag not found');
      return { status: 200, body: tag };
    });
    // No pools in the sink: listed empty, so mirror capture and load get NAPI's answers.
    r.on('GET', '/network_pools', () => ({ status: 200, body: [] }));
    r.on('GET', '/network_pools/:uuid', () => {
      throw new MockcloudError('ResourceNotFound', 'network pool not found');
    });
    r.on('POST', '/nic_tags', (q) => {
      this.count('napi.nicTag.create');
      return { status: 200, body: this.napi.addNicTag(isObject(q.body) ? q.body.name : undefined) };
    });
    r.on('GET', '/aggregations', () => ({ status: 200, body: [] }));
    r.on('GET', '/aggregations/:id', () => {
      throw new MockcloudError('ResourceNotFound', 'aggregation not found');
    });
    r.on('GET', CHANGEFEED_PATH, () => ({ status: 200, body: this.changefeed.resourcesBody() }));
    r.on('GET', CHANGEFEED_STATS_PATH, () => ({ status: 200, body: this.changefeed.statsBody() }));
    return r;
  }

  /** The NAPI changefeed websocket (any other upgrade is a 404). */
  private upgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    if (!this.changefeed.handleUpgrade(req, socket, head)) socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
  }
}

/** A CNAPI server object from a CN's sysinfo (the fields ServerList gives with extras=all). */
function serverOf(uuid: string, sysinfo: Record<string, unknown>): Record<string, unknown> {
  return {
    uuid,
    hostname: sysinfo.Hostname,
    datacenter: sysinfo['Datacenter Name'],
    current_platform: sysinfo['Live Image'],
    ram: Number(sysinfo['MiB of Memory']),
    headnode: false,
    setup: true,
    status: 'running',
    reserved: false,
    reservoir: false,
    traits: {},
    sysinfo,
  };
}
