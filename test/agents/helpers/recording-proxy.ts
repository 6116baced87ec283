/**
 * A recording HTTP proxy in front of a real service (the dev NAPI): every request is recorded
 * with its method, path and headers, then forwarded; websocket upgrades are piped through.
 * `down` answers 503 to plain requests (a NAPI outage) without forwarding them.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ProxyRecord {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  status?: number;
  at: number;
}

export class RecordingProxy {
  readonly records: ProxyRecord[] = [];
  down = false;
  /** While set, plain requests are recorded and held until it resolves, then forwarded. */
  hold: Promise<void> | undefined;
  url = '';
  private server: http.Server | undefined;
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly target: string) {}

  async start(): Promise<void> {
    const t = new URL(this.target);
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const rec: ProxyRecord = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: body.toString('utf8'), at: Date.now() };
        this.records.push(rec);
        if (this.down) {
          rec.status = 503;
          res.writeHead(503, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ code: 'ServiceUnavailable', message: 'down for a test' }));
          return;
        }
        void (this.hold ?? Promise.resolve()).then(() => forward(rec, body));
      });
      const forward = (rec: ProxyRecord, body: Buffer): void => {
        const up = http.request(
          { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, host: t.host }, agent: false },
          (ur) => {
            rec.status = ur.statusCode;
            res.writeHead(ur.statusCode ?? 502, ur.headers);
            ur.pipe(res);
          },
        );
        up.on('error', () => {
          res.writeHead(502);
          res.end();
        });
        up.end(body);
      };
    });
    this.server.on('upgrade', (req, socket, head) => {
      this.records.push({ method: 'UPGRADE', path: req.url ?? '', headers: req.headers, body: '', at: Date.now() });
      const upstream = net.connect(Number(t.port), t.hostname, () => {
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length) upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      this.sockets.add(upstream);
      this.sockets.add(socket as net.Socket);
      const end = (): void => {
        upstream.destroy();
        socket.destroy();
      };
      upstream.on('error', end);
      socket.on('error', end);
      upstream.on('close', end);
      socket.on('close', end);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Cut every piped websocket (the changefeed connection drops). */
  dropUpgrades(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  async stop(): Promise<void> {
    this.dropUpgrades();
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  }

  /** Records for one NIC (by colon-free MAC in the path). */
  forMac(mac: string): ProxyRecord[] {
    const m = mac.replace(/:/g, '');
    return this.records.filter((r) => r.path.split('?')[0] === `/nics/${m}`);
  }
}
