/**
 * The sockets cmon-agent listens on, all on one port (CMON always calls port 9163) and all
 * served by one request handler:
 *
 *   a fixed list   e.g. the daemon's bind IP (shared-IP mode), or 0.0.0.0 so requests to every
 *                  CN's own loopback address arrive at one socket (per-CN IP mode);
 *   'agent-ips'    one socket per distinct `CN Agent IP` of the fleet, opened when the first CN
 *                  with that address attaches and closed when the last one goes: per-CN IP
 *                  mode without a wildcard bind, at the cost of a socket per address.
 *
 * With port 0 the first socket picks a free port and the others reuse it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { capMessage, ConnectionGuard } from '../../common/connection-guard.js';
import { MockcloudError } from '../../common/errors.js';
import { failureFields, type Logger } from '../../common/log.js';

export type RequestHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export class ListenerSet {
  private readonly servers = new Map<string, http.Server>();
  private readonly pending = new Map<string, Promise<void>>();
  private port: number;
  /** Binds run one after another, so with port 0 the later ones know the port to reuse. */
  private chain: Promise<void> = Promise.resolve();
  /** CMON keeps its scrape connections alive; idle ones go after the same 65 s as the servers'. */
  readonly connections: ConnectionGuard;

  constructor(
    port: number,
    private readonly handler: RequestHandler,
    private readonly log: Logger,
    /** A socket was bound or closed: `addresses()` has changed (daemon.json lists them). */
    private readonly onChange: () => void = () => undefined,
  ) {
    this.port = port;
    this.connections = new ConnectionGuard(
      { idleTimeoutMs: 65_000, maxConnections: 1024 },
      { onCap: (report) => this.log.warn({ connections: report }, capMessage('cmon-agent', report)) },
    );
  }

  /** Every bound socket's address. */
  addresses(): { ip: string; port: number }[] {
    const out: { ip: string; port: number }[] = [];
    for (const s of this.servers.values()) {
      const a = s.address() as AddressInfo | null;
      if (a) out.push({ ip: a.address, port: a.port });
    }
    return out;
  }

  has(ip: string): boolean {
    return this.servers.has(ip) || this.pending.has(ip);
  }

  /** Listen on `ip` (once); rejects with a clear error when the address cannot be bound. */
  open(ip: string): Promise<void> {
    if (this.servers.has(ip)) return Promise.resolve();
    let p = this.pending.get(ip);
    if (!p) {
      p = this.chain.then(() => this.bind(ip)).finally(() => this.pending.delete(ip));
      this.chain = p.catch(() => undefined);
      this.pending.set(ip, p);
    }
    return p;
  }

  /** Wait for every bind in progress (tests, and start-up in 'agent-ips' mode). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending.values()]);
  }

  async close(ip: string): Promise<void> {
    await this.pending.get(ip)?.catch(() => undefined);
    const server = this.servers.get(ip);
    if (!server) return;
    this.servers.delete(ip);
    this.onChange();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  async closeAll(): Promise<void> {
    this.connections.stop();
    await this.settled();
    await Promise.all([...this.servers.keys()].map((ip) => this.close(ip)));
  }

  private async bind(ip: string): Promise<void> {
    const server = http.createServer(this.handler);
    server.keepAliveTimeout = 65_000;
    this.connections.watch(server);
    this.connections.start();
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        reject(new MockcloudError('InternalError', `cmon-agent cannot listen on ${ip}:${this.port}: ${err.message}`, { cause: err }));
      };
      server.once('error', onError);
      server.listen(this.port, ip, () => {
        server.off('error', onError);
        resolve();
      });
    });
    server.on('error', (err) => this.log.error({ ...failureFields(err), ip }, 'cmon-agent listener error'));
    if (this.port === 0) this.port = (server.address() as AddressInfo).port;
    this.servers.set(ip, server);
    this.onChange();
  }
}
