/**
 * A TCP proxy on 127.0.0.1 in front of an HTTP service that resets some requests sent on a
 * reused keep-alive connection, the way a peer that closed an idle connection does (issue 14's
 * "socket hang up" on NAPI): every `every`-th such request, alternately before it reaches the
 * service (nothing happened) and after (done, but the answer is lost). First requests of a
 * connection, and websocket traffic, pass untouched.
 */
import net from 'node:net';

const REQUEST_START = /^(GET|HEAD|POST|PUT|DELETE|PATCH|OPTIONS) \//;

export interface ResetStats {
  connections: number;
  requests: number;
  resetBefore: number;
  resetAfter: number;
}

export class ResetProxy {
  readonly stats: ResetStats = { connections: 0, requests: 0, resetBefore: 0, resetAfter: 0 };
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private reused = 0;
  /** Reset nothing while false. */
  enabled = true;

  constructor(
    private readonly target: { host: string; port: number },
    private readonly every: number,
  ) {}

  async start(): Promise<string> {
    const server = net.createServer((client) => this.onConnection(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private onConnection(client: net.Socket): void {
    this.stats.connections++;
    const upstream = net.connect(this.target.port, this.target.host);
    this.sockets.add(client);
    this.sockets.add(upstream);
    let requests = 0;
    let dropAnswer = false;
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('data', (chunk: Buffer) => {
      if (REQUEST_START.test(chunk.toString('latin1', 0, 16))) {
        requests++;
        this.stats.requests++;
        if (requests > 1 && this.enabled && ++this.reused % this.every === 0) {
          if ((this.reused / this.every) % 2 === 1) {
            this.stats.resetBefore++;
            client.resetAndDestroy();
            upstream.destroy();
            return;
          }
          this.stats.resetAfter++;
          dropAnswer = true;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (dropAnswer) {
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  }
}
