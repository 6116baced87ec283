/**
 * FWAPI's update fan-out (sdc-fwapi lib/update.js over node-fast-messages lib/server.js): every
 * rule change and every `POST /updates` is queued, and the queue is sent every `pollIntervalMs`
 * (FWAPI's `pollInterval`, 3 s), in order, to every connected firewaller over node-fast
 * (src/common/fast/protocol.ts) on FWAPI's fast port. A firewaller calls the `messages` RPC
 * with its `client_id` and gets the server's state first, then each update as
 * `{id, name, req_id, server_id, value}`; `ping` is answered with an empty END. Each
 * firewaller decides itself whether an update touches its CN's VMs, as the real ones do.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { encodeFast, FastDecoder, fastData, FP_STATUS_DATA, FP_STATUS_END, FP_STATUS_ERROR, type FastMessage } from '../../common/fast/protocol.js';
import type { Logger } from '../../common/log.js';
import { newUuid } from '../../common/uuid.js';

interface Client {
  id: string;
  socket: net.Socket;
  msgid: number;
}

export class UpdateServer {
  readonly state: { clients: string[]; server_id: string; last_req_id?: string; last_id?: number };
  private readonly clients = new Map<string, Client>();
  private readonly sockets = new Set<net.Socket>();
  private server: net.Server | undefined;
  private queue: { name: string; value: unknown; req_id: string }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private nextId = 1;
  readonly stats = { queued: 0, sent: 0 };

  constructor(
    private readonly log: Logger,
    serverId: string,
    private readonly pollIntervalMs: number,
  ) {
    this.state = { clients: [], server_id: serverId };
  }

  get port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? 0;
  }

  get listening(): boolean {
    return this.server?.listening === true;
  }

  async listen(host: string, port: number): Promise<void> {
    const server = net.createServer((s) => this.onConnection(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.timer = setInterval(() => this.flush(), this.pollIntervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** lib/update.js queue: the update's uuid (FWAPI's x-update-id). */
  queueUpdate(name: string, value: unknown): string {
    const uuid = newUuid();
    this.queue.push({ name, value, req_id: uuid });
    this.stats.queued++;
    return uuid;
  }

  /** lib/update.js ping: a ping to every client, and who is connected. */
  ping(): { connected: string[]; ping_id: string } {
    const pingId = newUuid();
    this.send({ name: 'ping', value: { ping_id: pingId } });
    return { connected: [...this.state.clients], ping_id: pingId };
  }

  /** Send what is queued, oldest first (the poll of the `fwapi_updates` bucket). */
  flush(): void {
    const batch = this.queue;
    this.queue = [];
    for (const u of batch) this.send({ id: this.nextId++, name: u.name, value: u.value, req_id: u.req_id });
  }

  private send(opts: { id?: number; name: string; value: unknown; req_id?: string }): void {
    const reqId = opts.req_id ?? newUuid();
    const message = { id: opts.id, name: opts.name, req_id: reqId, server_id: this.state.server_id, value: opts.value };
    for (const c of this.clients.values()) this.write(c.socket, FP_STATUS_DATA, c.msgid, 'messages', [message]);
    this.state.last_req_id = reqId;
    if (opts.id) this.state.last_id = opts.id;
    this.stats.sent++;
  }

  private write(socket: net.Socket, status: number, msgid: number, name: string, d: unknown): void {
    if (!socket.destroyed) socket.write(encodeFast({ status, msgid, data: fastData(name, d) }));
  }

  private onConnection(socket: net.Socket): void {
    this.sockets.add(socket);
    const decoder = new FastDecoder();
    let clientId: string | undefined;
    socket.on('data', (chunk: Buffer) => {
      let msgs: FastMessage[];
      try {
        msgs = decoder.push(chunk);
      } catch (err) {
        this.log.warn({ err }, 'fast: bad frame from a client');
        socket.destroy();
        return;
      }
      for (const m of msgs) {
        const argv = Array.isArray(m.data.d) ? m.data.d : [];
        const opts = argv[0] as Record<string, unknown> | undefined;
        const fail = (message: string): void => this.write(socket, FP_STATUS_ERROR, m.msgid, m.data.m.name, { name: 'Error', message });
        if (m.data.m.name === 'messages') {
          if (argv.length !== 1) fail('"messages" RPC expects one argument');
          else if (!opts || typeof opts !== 'object' || Array.isArray(opts)) fail('"messages" RPC expects an options object');
          else if (typeof opts.client_id !== 'string') fail('clients must provide their "client_id"');
          else {
            clientId = opts.client_id;
            this.addClient(clientId, socket, m.msgid, typeof opts.version === 'number' && opts.version >= 1);
          }
        } else if (m.data.m.name === 'ping') {
          this.write(socket, FP_STATUS_END, m.msgid, 'ping', []);
        } else {
          this.write(socket, FP_STATUS_ERROR, m.msgid, m.data.m.name, { name: 'FastError', message: `unsupported RPC method: "${m.data.m.name}"` });
        }
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.sockets.delete(socket);
      if (clientId && this.clients.get(clientId)?.socket === socket) this.removeClient(clientId);
    });
  }

  private addClient(id: string, socket: net.Socket, msgid: number, sendState: boolean): void {
    if (this.clients.has(id)) {
      this.log.warn('duplicate client "%s" connected', id);
      this.removeClient(id);
    }
    this.state.clients.push(id);
    this.clients.set(id, { id, socket, msgid });
    if (sendState) {
      this.write(socket, FP_STATUS_DATA, msgid, 'messages', [
        { name: 'sync', last_req_id: this.state.last_req_id, last_id: this.state.last_id, server_id: this.state.server_id, version: 1 },
      ]);
    }
    this.log.info('client "%s" added', id);
  }

  private removeClient(id: string): void {
    const c = this.clients.get(id);
    this.clients.delete(id);
    const i = this.state.clients.indexOf(id);
    if (i !== -1) this.state.clients.splice(i, 1);
    if (c) this.write(c.socket, FP_STATUS_END, c.msgid, 'messages', []);
  }
}
