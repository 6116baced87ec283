/**
 * `--metrics-address`: the daemon's `GET /metrics` on a listener of its own, for a Prometheus
 * or CMON-style scraper on another host (the control API answers loopback only). It serves
 * that one path, the same text as the control API's, and answers everything else as the
 * control API does: a path no route has is a 404 and another method a 405, with the
 * Triton-style `{"code","message"}` body.
 *
 * Any Host is answered: a scraper names its target as its service discovery does (an IP, a
 * CNS or other DNS name), and what is served is read-only figures, as every Triton service's
 * metrics port serves them (the control API, which changes the fleet, keeps to loopback names).
 */
import type { AddressInfo } from 'node:net';
import { listenerUrl } from '../common/listen-address.js';
import type { Logger } from '../common/log.js';
import { closeServer, createServer, listen, route, sendError, type RestifyServer } from '../headnode/http.js';
import { answerUnrouted, canonicalUrl, METHODS, methodNotAllowed, sendText, type ControlResponse } from './control-api.js';
import type { ListenAddress } from './config.js';

export class MetricsListener {
  private server: RestifyServer | undefined;
  private addr: AddressInfo | undefined;

  constructor(
    private readonly where: ListenAddress,
    private readonly scrape: () => Promise<NonNullable<ControlResponse['text']>>,
    private readonly log: Logger,
  ) {}

  /** Where it listens (the port chosen when 0 was asked). */
  get address(): { ip: string; port: number; url: string } {
    if (!this.addr) throw new Error('metrics listener not started');
    return { ip: this.where.ip, port: this.addr.port, url: listenerUrl(this.where.ip, this.addr.port, '/metrics') };
  }

  async start(): Promise<void> {
    const server = createServer({ name: 'mockcloud-metrics', log: this.log, parseBody: false });
    server.pre((req, res, next) => {
      try {
        req.url = canonicalUrl(req.url ?? '/');
        next();
      } catch (err) {
        sendError(res, err, this.log);
        next(false);
      }
    });
    answerUnrouted(server, this.log);
    const handler = route(this.log, async (req, res) => {
      if (req.method !== 'GET') throw methodNotAllowed(req);
      sendText(res, 200, await this.scrape());
    });
    for (const m of METHODS) server[m]('/metrics', handler);
    await listen(server, this.where.ip, this.where.port);
    this.server = server;
    this.addr = server.server.address() as AddressInfo;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await closeServer(server);
  }
}
