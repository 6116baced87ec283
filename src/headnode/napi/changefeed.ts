/**
 * NAPI's changefeed, speaking node-sdc-changefeed's publisher protocol (changefeed 1.5.x
 * lib/publisher.js) over `ws`:
 *
 * - `GET /changefeeds` answers the resource configuration (`{<resource>: {resource,
 *   bootstrapRoute, subResources}}`); listeners use it as a compatibility probe.
 * - `GET /changefeeds` with a websocket upgrade: the listener's first text frame registers
 *   it. With `Accept-Version` below 2 (or none) that is v1, `{instance, changeKind:
 *   {resource, subResources}}`, answered with that resource's configuration; otherwise v2,
 *   `{instance, resources: [{resource, subResources}, …]}`, answered with
 *   `{bootstrapRoutes: [<configuration>, …]}`. A bad registration closes the socket with
 *   the reason. Later frames (the listener's "heartbeat" texts) are ignored.
 * - Each change is then sent to every registration of its resource whose subResources
 *   share one with the change: `{changeKind: {resource, subResources}, changedResourceId,
 *   …extra fields, published: "<ms>"}`.
 * - `GET /changefeeds/stats` shows the registrations.
 *
 * A registration is keyed by its `instance`: a listener that reconnects replaces its old one.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../common/log.js';

export interface ChangeItem {
  changeKind: { resource: string; subResources: string[] };
  changedResourceId: string;
  [extra: string]: unknown;
}

export interface ResourceConfig {
  resource: string;
  bootstrapRoute: string;
  subResources: string[];
}

/** NAPI's publisher configuration (sdc-napi lib/napi.js). */
export const NAPI_CHANGEFEED_RESOURCES: ResourceConfig[] = [
  { bootstrapRoute: '/aggregations', resource: 'aggregation', subResources: ['create', 'delete', 'lacp_mode'] },
  { bootstrapRoute: '/networks', resource: 'network', subResources: ['create', 'delete', 'gateway', 'resolvers', 'routes'] },
  { bootstrapRoute: '/nic_tags', resource: 'nic_tag', subResources: ['create', 'delete'] },
  {
    bootstrapRoute: '/nics',
    resource: 'nic',
    subResources: [
      'create',
      'delete',
      'allow_dhcp_spoofing',
      'allow_ip_spoofing',
      'allow_mac_spoofing',
      'allow_restricted_traffic',
      'allow_unfiltered_promisc',
      'primary',
      'state',
    ],
  },
];

interface Registration {
  instance: string;
  service?: string;
  resource: string;
  subResources: string[];
  socket: WebSocket;
}

const PATH = '/changefeeds';

export class ChangefeedPublisher {
  private readonly log: Logger;
  private readonly resources = new Map<string, ResourceConfig>();
  /** resource -> instance -> registration. */
  private readonly registrations = new Map<string, Map<string, Registration>>();
  private readonly sockets = new Set<WebSocket>();
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  private published = 0;

  constructor(opts: { log: Logger; resources: ResourceConfig[] }) {
    this.log = opts.log.child({ component: 'changefeed' });
    for (const r of opts.resources) {
      this.resources.set(r.resource, r);
      this.registrations.set(r.resource, new Map());
    }
  }

  /** The body of plain `GET /changefeeds`. */
  resourcesBody(): Record<string, ResourceConfig> {
    return Object.fromEntries(this.resources);
  }

  /** The body of `GET /changefeeds/stats`. */
  statsBody(): Record<string, unknown> {
    const registrations: Record<string, Record<string, unknown>> = {};
    for (const [resource, regs] of this.registrations) {
      registrations[resource] = {};
      for (const [instance, r] of regs) {
        registrations[resource]![instance] = { instance, service: r.service, resource, subResources: r.subResources };
      }
    }
    return { listeners: this.sockets.size, published: this.published, registrations };
  }

  /** Handle an HTTP upgrade; answers false when it is not for the changefeed. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0];
    if (path !== PATH) return false;
    const version = changefeedVersion(req.headers['accept-version'] ?? req.headers['x-api-version']);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, version));
    return true;
  }

  publish(item: ChangeItem): void {
    const regs = this.registrations.get(item.changeKind.resource);
    if (!regs || regs.size === 0) return;
    const text = JSON.stringify({ ...item, published: String(Date.now()) });
    for (const reg of regs.values()) {
      if (!item.changeKind.subResources.some((s) => reg.subResources.includes(s))) continue;
      if (reg.socket.readyState !== reg.socket.OPEN) continue;
      reg.socket.send(text);
      this.published++;
    }
  }

  /** Close every listener's socket. */
  close(): void {
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
    for (const regs of this.registrations.values()) regs.clear();
    this.wss.close();
  }

  private accept(ws: WebSocket, version: 1 | 2): void {
    this.sockets.add(ws);
    let registered = false;
    ws.on('message', (data, isBinary) => {
      if (registered || isBinary) return;
      registered = true;
      const text = Buffer.isBuffer(data) ? data.toString('utf8') : Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data).toString('utf8');
      if (version === 1) this.registerV1(ws, text);
      else this.registerV2(ws, text);
    });
    ws.on('close', () => this.detach(ws));
    ws.on('error', (err) => {
      this.log.debug({ err }, 'changefeed socket error');
      this.detach(ws);
    });
  }

  private fail(ws: WebSocket, reason: string, registration: unknown): void {
    this.log.warn({ registration }, `Invalid changefeed registration: ${reason}`);
    ws.close(1000, reason.slice(0, 120));
  }

  private registerV1(ws: WebSocket, text: string): void {
    let reg: { instance?: unknown; service?: unknown; changeKind?: { resource?: unknown; subResources?: unknown } };
    try {
      reg = JSON.parse(text) as typeof reg;
    } catch {
      this.fail(ws, 'failed to parse v1 registration payload', text);
      return;
    }
    if (!isObject(reg)) return this.fail(ws, 'v1 registration should be an object', reg);
    if (typeof reg.instance !== 'string') return this.fail(ws, 'v1 registration should contain an "instance" identifier', reg);
    if (!isObject(reg.changeKind)) return this.fail(ws, 'v1 registration should contain a "changeKind"', reg);
    if (typeof reg.changeKind.resource !== 'string') return this.fail(ws, 'v1 registration should contain a valid "resource"', reg);
    if (!isStringArray(reg.changeKind.subResources)) {
      return this.fail(ws, 'v1 registration should contain a valid "subResources" array', reg);
    }
    const config = this.resources.get(reg.changeKind.resource);
    if (!config) return this.fail(ws, `unknown resource: ${reg.changeKind.resource}`, reg);
    this.register(ws, reg.instance, typeof reg.service === 'string' ? reg.service : undefined, config.resource, reg.changeKind.subResources);
    ws.send(JSON.stringify(config));
  }

  private registerV2(ws: WebSocket, text: string): void {
    let reg: { instance?: unknown; service?: unknown; resources?: unknown };
    try {
      reg = JSON.parse(text) as typeof reg;
    } catch {
      this.fail(ws, 'failed to parse v2 registration payload', text);
      return;
    }
    if (!isObject(reg)) return this.fail(ws, 'v2 registration should be an object', reg);
    if (typeof reg.instance !== 'string') return this.fail(ws, 'v2 registration should contain an "instance" identifier', reg);
    if (!Array.isArray(reg.resources)) return this.fail(ws, 'v2 registration should contain a "resources" array', reg);
    if (reg.resources.length === 0) return this.fail(ws, 'no resources specified', reg);
    const wanted: { resource: string; subResources: string[] }[] = [];
    const configs: ResourceConfig[] = [];
    for (const r of reg.resources as unknown[]) {
      if (!isObject(r)) return this.fail(ws, 'v2 registration "resources" array should contain objects', reg);
      const { resource, subResources } = r as { resource?: unknown; subResources?: unknown };
      if (typeof resource !== 'string' || resource.length === 0) {
        return this.fail(ws, 'v2 registration resources should contain a "resource"', reg);
      }
      if (!isStringArray(subResources)) return this.fail(ws, 'v2 registration resources should contain "subResources"', reg);
      const config = this.resources.get(resource);
      if (!config) return this.fail(ws, `unknown resource: ${resource}`, reg);
      wanted.push({ resource, subResources });
      configs.push(config);
    }
    const service = typeof reg.service === 'string' ? reg.service : undefined;
    for (const w of wanted) this.register(ws, reg.instance, service, w.resource, w.subResources);
    ws.send(JSON.stringify({ bootstrapRoutes: configs }));
  }

  private register(ws: WebSocket, instance: string, service: string | undefined, resource: string, subResources: string[]): void {
    const regs = this.registrations.get(resource)!;
    regs.set(instance, { instance, ...(service ? { service } : {}), resource, subResources: [...subResources], socket: ws });
    this.log.info({ instance, service, resource }, 'changefeed listener registered');
  }

  private detach(ws: WebSocket): void {
    this.sockets.delete(ws);
    for (const regs of this.registrations.values()) {
      for (const [instance, r] of regs) if (r.socket === ws) regs.delete(instance);
    }
  }
}

/** The registration protocol a listener speaks, from its Accept-Version (`~1`, `~2`, `*`). */
export function changefeedVersion(header: string | string[] | undefined): 1 | 2 {
  const v = Array.isArray(header) ? header[0] : header;
  if (!v || v.trim() === '*') return 1;
  const m = /(\d+)/.exec(v);
  return m && Number(m[1]) >= 2 ? 2 : 1;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string');
}
