/**
 * A changefeed listener (the client side of node-sdc-changefeed 1.5, protocol v2 as
 * src/common/changefeed/protocol.ts defines it) for NAPI, ONE for the whole daemon:
 *
 *   1. plain `GET /changefeeds` as a probe (a NAPI without a changefeed answers 404: then the
 *      agents rely on their periodic passes and the probe is repeated every `probeRetryMs`);
 *   2. `GET /changefeeds` upgraded to a websocket with `Accept-Version: ~2`;
 *   3. send `{"instance", "service", "resources": [{resource, subResources}, ...]}`;
 *   4. the first frame is `{"bootstrapRoutes": [...]}`: one `onBootstrap` per resource (the
 *      caller re-reads everything of that resource, since items may have been missed);
 *   5. every later frame is one change item `{changeKind: {resource, subResources},
 *      changedResourceId, ...}`;
 *   6. the text `heartbeat` every 27.817 s; reconnect with backoff (5 s doubling to 30 s).
 *
 * The real net-agent registers once per CN, each with its own instance uuid; NAPI's
 * `/changefeeds/stats` therefore lists one registration here, not one per mock CN.
 * Timers go through the shared Scheduler.
 */
import WebSocket from 'ws';
import {
  bootstrapResources,
  changefeedUrls,
  frameText,
  LISTENER_ACCEPT_VERSION,
  LISTENER_HEARTBEAT,
  parseChangeItem,
  readFrame,
  registrationFrame,
  type ChangeItem,
  type ChangeKind,
} from '../../common/changefeed/protocol.js';
import type { JsonHttpClient } from '../../common/http-client.js';
import type { Logger } from '../../common/log.js';
import { doublingDelay } from '../../runtime/backoff.js';
import type { Scheduler, ScheduledJob } from '../../runtime/scheduler.js';

/** The largest frame taken from NAPI's changefeed (an item or the bootstrap answer). */
export const MAX_CHANGE_FRAME_BYTES = 1024 * 1024;

export type ChangefeedResource = ChangeKind;
export type ChangefeedItem = ChangeItem;

export interface ChangefeedOptions {
  /** The publisher's base URL (http://...), e.g. NAPI's. */
  url: string;
  instance: string;
  service: string;
  resources: ChangefeedResource[];
  http: JsonHttpClient;
  scheduler: Scheduler;
  log: Logger;
  userAgent: string;
  onItem(item: ChangefeedItem): void;
  onBootstrap(resource: string): void;
  heartbeatMs?: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** How often to ask again a publisher that has no changefeed. */
  probeRetryMs?: number;
}

export type ChangefeedState = 'stopped' | 'probing' | 'connecting' | 'bootstrapping' | 'live' | 'waiting' | 'unsupported';

export class ChangefeedListener {
  state: ChangefeedState = 'stopped';
  readonly stats = { connects: 0, items: 0, bootstraps: 0, disconnects: 0, badFrames: 0 };
  private ws: WebSocket | undefined;
  private attempt = 0;
  private retryJob: ScheduledJob | undefined;
  private heartbeatJob: ScheduledJob | undefined;
  private readonly o: Required<Pick<ChangefeedOptions, 'heartbeatMs' | 'backoffMinMs' | 'backoffMaxMs' | 'probeRetryMs'>> & ChangefeedOptions;

  constructor(opts: ChangefeedOptions) {
    this.o = { heartbeatMs: 27_817, backoffMinMs: 5000, backoffMaxMs: 30_000, probeRetryMs: 5 * 60_000, ...opts };
  }

  get live(): boolean {
    return this.state === 'live';
  }

  start(): void {
    if (this.state !== 'stopped') return;
    this.state = 'waiting';
    void this.connect();
  }

  stop(): void {
    this.state = 'stopped';
    this.o.scheduler.cancel(this.retryJob);
    this.o.scheduler.cancel(this.heartbeatJob);
    this.retryJob = undefined;
    this.heartbeatJob = undefined;
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      ws.terminate();
    }
  }

  private async connect(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'probing';
    const urls = changefeedUrls(this.o.url);
    let status: number;
    try {
      const res = await this.o.http.request({ method: 'GET', url: urls.probe, headers: { 'user-agent': this.o.userAgent } });
      status = res.statusCode;
    } catch (err) {
      this.o.log.debug({ err }, 'changefeed probe failed');
      this.retry(false);
      return;
    }
    if (this.state !== 'probing') return;
    if (status === 404 || status === 405 || status === 501) {
      if (this.stats.connects === 0 && this.attempt === 0) this.o.log.info({ url: urls.base }, 'NAPI offers no changefeed: relying on periodic passes');
      this.state = 'unsupported';
      this.retryJob = this.o.scheduler.schedule(this.o.probeRetryMs, () => {
        this.retryJob = undefined;
        void this.connect();
      });
      return;
    }
    if (status < 200 || status >= 300) {
      this.retry(false);
      return;
    }
    this.state = 'connecting';
    const ws = new WebSocket(urls.socket, {
      headers: { 'accept-version': LISTENER_ACCEPT_VERSION, 'user-agent': this.o.userAgent },
      handshakeTimeout: 10_000,
      // A change item names one NIC or network: a frame past this is not NAPI's (ws closes with 1009; we reconnect).
      maxPayload: MAX_CHANGE_FRAME_BYTES,
    });
    this.ws = ws;
    ws.on('open', () => {
      this.state = 'bootstrapping';
      ws.send(registrationFrame({ instance: this.o.instance, service: this.o.service, resources: this.o.resources }));
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      this.onText(ws, frameText(data));
    });
    ws.on('error', (err) => this.o.log.debug({ err }, 'changefeed socket error'));
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.o.scheduler.cancel(this.heartbeatJob);
      this.heartbeatJob = undefined;
      if (this.state === 'stopped') return;
      const wasLive = this.state === 'live';
      if (wasLive) {
        this.stats.disconnects++;
        this.o.log.warn('NAPI changefeed connection ended; reconnecting');
      }
      this.retry(wasLive);
    });
  }

  private onText(ws: WebSocket, text: string): void {
    const frame = readFrame(text);
    if (!frame) {
      this.stats.badFrames++;
      return;
    }
    if (this.state === 'bootstrapping') {
      const resources = bootstrapResources(frame);
      if (!resources) {
        this.stats.badFrames++;
        this.o.log.warn({ frame: text.slice(0, 200) }, 'changefeed: expected the bootstrap answer; reconnecting');
        ws.close();
        return;
      }
      this.state = 'live';
      this.attempt = 0;
      this.stats.connects++;
      this.o.log.info({ instance: this.o.instance }, 'NAPI changefeed registered');
      this.armHeartbeat(ws);
      for (const resource of resources) {
        this.stats.bootstraps++;
        this.o.onBootstrap(resource);
      }
      return;
    }
    if (this.state !== 'live') return;
    const item = parseChangeItem(frame);
    if (!item) {
      this.stats.badFrames++;
      return;
    }
    this.stats.items++;
    this.o.onItem(item);
  }

  private armHeartbeat(ws: WebSocket): void {
    this.heartbeatJob = this.o.scheduler.schedule(this.o.heartbeatMs, () => {
      this.heartbeatJob = undefined;
      if (this.ws !== ws || this.state !== 'live') return;
      if (ws.readyState === WebSocket.OPEN) ws.send(LISTENER_HEARTBEAT);
      this.armHeartbeat(ws);
    });
  }

  private retry(resetAttempts: boolean): void {
    if (this.state === 'stopped') return;
    if (resetAttempts) this.attempt = 0;
    const delay = doublingDelay(this.o.backoffMinMs, this.o.backoffMaxMs, this.attempt++);
    this.state = 'waiting';
    this.o.scheduler.cancel(this.retryJob);
    this.retryJob = this.o.scheduler.schedule(delay, () => {
      this.retryJob = undefined;
      void this.connect();
    });
  }
}
