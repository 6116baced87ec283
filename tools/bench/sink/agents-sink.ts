/**
 * The sink's SAPI and FWAPI, for the agents step (issue 29): what config-agent and firewaller
 * ask of them, answered cheaply and counted.
 *
 *   SAPI   GET /configs/:uuid: one config for every instance (the sdc application's service
 *          names, `no_rabbit`) with its Etag; 304 for a matching If-None-Match; GET /services
 *          and /instances answer empty lists (nothing to adopt).
 *   FWAPI  POST /resolve: the rules sent so far of the owner; the update stream on its own port
 *          (node-fast, the dev FWAPI's UpdateServer) for the rule the step sends.
 *   control (on the SAPI listener): GET /__sink/agents/stats, POST /__sink/agents/rule {rule, owner_uuid}.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createQuietLogger } from '../../../src/common/log.js';
import { newUuid } from '../../../src/common/uuid.js';
import { UpdateServer } from '../../../src/headnode/fwapi/updates.js';
import { readJsonBody } from './http-util.js';

export interface AgentsSinkUrls {
  sapi: string;
  fwapi: string;
  fwapiFast: string;
}

const CONFIG = {
  manifests: [],
  metadata: { CNAPI_SERVICE: 'cnapi.bench.local', VMAPI_SERVICE: 'vmapi.bench.local', NAPI_SERVICE: 'napi.bench.local', no_rabbit: true },
};
const ETAG = createHash('sha1').update(JSON.stringify(CONFIG)).digest('hex');

export class AgentsSink {
  readonly counters: Record<string, number> = {};
  private readonly rules: Record<string, unknown>[] = [];
  private readonly servers: http.Server[] = [];
  private readonly sockets = new Set<Socket>();
  private updates: UpdateServer | undefined;

  constructor(private readonly bindIp: string) {}

  private count(name: string): void {
    this.counters[name] = (this.counters[name] ?? 0) + 1;
  }

  async start(): Promise<AgentsSinkUrls> {
    const sapi = await this.listen((req, res) => this.sapi(req, res));
    const fwapi = await this.listen((req, res) => void this.fwapi(req, res));
    this.updates = new UpdateServer(createQuietLogger('bench-fwapi'), 'fwapi.bench.local', 50);
    await this.updates.listen(this.bindIp, 0);
    return { sapi, fwapi, fwapiFast: `tcp://${this.bindIp}:${this.updates.port}` };
  }

  async stop(): Promise<void> {
    await this.updates?.close();
    for (const s of this.sockets) s.destroy();
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }

  private async listen(handler: http.RequestListener): Promise<string> {
    const server = http.createServer(handler);
    server.keepAliveTimeout = 65_000;
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, this.bindIp, resolve));
    this.servers.push(server);
    return `http://${this.bindIp}:${(server.address() as AddressInfo).port}`;
  }

  private send(res: http.ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  private sapi(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://sapi');
    if (req.method === 'GET' && url.pathname === '/__sink/agents/stats') return this.send(res, 200, { counters: this.counters, clients: this.updates?.state.clients.length ?? 0 });
    if (req.method === 'POST' && url.pathname === '/__sink/agents/rule') {
      void readJsonBody(req).then((b) => {
        const body = b as { rule: string; owner_uuid: string };
        const rule = { uuid: newUuid(), version: `${Date.now()}.000001`, enabled: true, log: false, owner_uuid: body.owner_uuid, rule: body.rule };
        this.rules.push(rule);
        this.updates!.queueUpdate('fw.add_rule', rule);
        this.send(res, 202, rule);
      });
      return;
    }
    if (req.method === 'GET' && url.pathname.startsWith('/configs/')) {
      if (req.headers['if-none-match'] === ETAG) {
        this.count('sapi.config.304');
        return this.send(res, 304, undefined, { etag: ETAG });
      }
      this.count('sapi.config.200');
      return this.send(res, 200, CONFIG, { etag: ETAG });
    }
    this.count('sapi.other');
    if (req.method === 'GET' && (url.pathname === '/services' || url.pathname === '/instances')) return this.send(res, 200, []);
    if (req.method === 'GET' && url.pathname === '/ping') return this.send(res, 200, { mode: 'full' });
    return this.send(res, 404, { code: 'ResourceNotFound', message: `${url.pathname} does not exist` });
  }

  private async fwapi(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fwapi');
    if (req.method === 'POST' && url.pathname === '/resolve') {
      this.count('fwapi.resolve');
      const body = (await readJsonBody(req)) as { owner_uuid?: string };
      const rules = this.rules.filter((r) => r.owner_uuid === body.owner_uuid);
      return this.send(res, 200, { rules, tags: {}, vms: [], allVMs: false, owner_uuid: body.owner_uuid });
    }
    this.count('fwapi.other');
    return this.send(res, 404, { code: 'ResourceNotFound', message: `${url.pathname} does not exist` });
  }
}
