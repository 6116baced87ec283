/**
 * A changefeed publisher over `ws` (node-sdc-changefeed's lib/publisher.js, protocol in
 * ./protocol.ts): the dev NAPI's feed, and the bench sink's stand-in for NAPI's.
 *
 * The owner mounts `GET /changefeeds` (`resourcesBody()`) and `GET /changefeeds/stats`
 * (`statsBody()`) on its HTTP server and hands it the server's upgrades (`handleUpgrade`).
 * A listener's first text frame registers it; a bad registration closes the socket with the
 * reason; later frames (its heartbeats) are ignored. A registration is keyed by its
 * `instance`: a listener that reconnects replaces its old one.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../log.js';
import {
  bootstrapFrame,
  changefeedVersion,
  changeItemFrame,
  frameText,
  isChangefeedUpgrade,
  parseRegistration,
  wantsItem,
  type ChangefeedVersion,
  type ChangeItem,
  type ResourceConfig,
} from './protocol.js';

/** The largest frame a listener may send (its registration is well under 1 KiB). */
export const MAX_LISTENER_FRAME_BYTES = 64 * 1024;
/** Change items waiting for a listener that does not read, at most. */
export const MAX_LISTENER_BUFFERED_BYTES = 8 * 1024 * 1024;

interface ListenerRegistration {
  instance: string;
  service?: string;
  resource: string;
  subResources: string[];
  socket: WebSocket;
}

export interface ChangefeedPublisherOptions {
  log: Logger;
  resources: ResourceConfig[];
  /** Called for each listener whose websocket opened. */
  onConnect?: () => void;
}

export class ChangefeedPublisher {
  private readonly log: Logger;
  private readonly onConnect: (() => void) | undefined;
  private readonly resources = new Map<string, ResourceConfig>();
  /** resource -> instance -> registration. */
  private readonly registrations = new Map<string, Map<string, ListenerRegistration>>();
  private readonly sockets = new Set<WebSocket>();
  /** A listener sends a registration and heartbeats, small frames: more closes it (1009). */
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_LISTENER_FRAME_BYTES });
  private published = 0;

  constructor(opts: ChangefeedPublisherOptions) {
    this.log = opts.log.child({ component: 'changefeed' });
    this.onConnect = opts.onConnect;
    for (const r of opts.resources) {
      this.resources.set(r.resource, r);
      this.registrations.set(r.resource, new Map());
    }
  }

  /** Open listener sockets. */
  get listeners(): number {
    return this.sockets.size;
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
    if (!isChangefeedUpgrade(req.url)) return false;
    const version = changefeedVersion(req.headers['accept-version'] ?? req.headers['x-api-version']);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, version));
    return true;
  }

  publish(item: ChangeItem): void {
    const regs = this.registrations.get(item.changeKind.resource);
    if (!regs || regs.size === 0) return;
    const text = changeItemFrame(item);
    for (const reg of regs.values()) {
      if (!wantsItem(reg.subResources, item.changeKind)) continue;
      if (reg.socket.readyState !== reg.socket.OPEN) continue;
      // A listener that does not read is dropped, not buffered for: it reconnects and bootstraps.
      if (reg.socket.bufferedAmount > MAX_LISTENER_BUFFERED_BYTES) {
        this.log.warn({ instance: reg.instance }, 'changefeed listener does not keep up: closing its socket');
        reg.socket.terminate();
        continue;
      }
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

  private accept(ws: WebSocket, version: ChangefeedVersion): void {
    this.sockets.add(ws);
    this.onConnect?.();
    let registered = false;
    ws.on('message', (data, isBinary) => {
      if (registered || isBinary) return;
      registered = true;
      this.register(ws, version, frameText(data));
    });
    ws.on('close', () => this.detach(ws));
    ws.on('error', (err) => {
      this.log.debug({ err }, 'changefeed socket error');
      this.detach(ws);
    });
  }

  private register(ws: WebSocket, version: ChangefeedVersion, text: string): void {
    const reg = parseRegistration(text, version, (resource) => this.resources.get(resource));
    if ('refused' in reg) {
      this.log.warn({ registration: reg.registration }, `Invalid changefeed registration: ${reg.refused}`);
      ws.close(1000, reg.refused.slice(0, 120));
      return;
    }
    const { instance, service } = reg;
    for (const { resource, subResources } of reg.kinds) {
      this.registrations.get(resource)!.set(instance, { instance, ...(service ? { service } : {}), resource, subResources: [...subResources], socket: ws });
      this.log.info({ instance, service, resource }, 'changefeed listener registered');
    }
    ws.send(bootstrapFrame(version, reg.configs));
  }

  private detach(ws: WebSocket): void {
    this.sockets.delete(ws);
    for (const regs of this.registrations.values()) {
      for (const [instance, r] of regs) if (r.socket === ws) regs.delete(instance);
    }
  }
}
