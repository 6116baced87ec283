/**
 * The client side of FWAPI's update stream (node-fast-messages lib/client.js over node-fast,
 * src/common/fast/protocol.ts), ONE for the daemon: connect to FWAPI's fast port (2020), call
 * the `messages` RPC with `{client_id, version: 1}`, take the first DATA as the server's state
 * and every later one as an update `{id, name, req_id, server_id, value}`. A connection that
 * fails is tried again at once the first time, after 1 s up to the tenth attempt and after 5 s
 * from then on; a stream that ends or breaks is reconnected from the first attempt
 * (client.js state_connecting.error, state_restart). Timers go through the shared scheduler.
 *
 * The real firewaller connects once per CN with its server uuid as client_id; FWAPI sends
 * every update to every connected client, so one connection hears what all of them would.
 */
import net from 'node:net';
import { decodeFastError, encodeFast, FastDecoder, fastData, FP_STATUS_DATA, FP_STATUS_END, FP_STATUS_ERROR } from '../../common/fast/protocol.js';
import type { Logger } from '../../common/log.js';
import type { Scheduler, ScheduledJob } from '../../runtime/scheduler.js';

export interface StreamMessage {
  id?: number;
  name: string;
  req_id?: string;
  server_id?: string;
  value?: unknown;
}

export interface StreamOptions {
  host: string;
  port: number;
  clientId: string;
  scheduler: Scheduler;
  log: Logger;
  onMessage(msg: StreamMessage): void;
  /** The stream (re)started: `first` false after a reconnect (updates may have been missed). */
  onStart(first: boolean, serverState: Record<string, unknown>): void;
}

export class UpdateStream {
  readonly stats = { connects: 0, attempts: 0, messages: 0, restarts: 0, badFrames: 0 };
  private socket: net.Socket | undefined;
  private retryJob: ScheduledJob | undefined;
  private attempt = 0;
  private stopped = true;
  private started = false;
  private msgid = 1;

  constructor(private readonly o: StreamOptions) {}

  get connected(): boolean {
    return this.socket !== undefined && this.socket.readyState === 'open';
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.o.scheduler.cancel(this.retryJob);
    this.retryJob = undefined;
    this.socket?.destroy();
    this.socket = undefined;
  }

  private connect(): void {
    if (this.stopped) return;
    this.attempt++;
    this.stats.attempts++;
    const socket = net.connect(this.o.port, this.o.host);
    this.socket = socket;
    const decoder = new FastDecoder();
    let ready = false;
    let channel = 0;
    socket.setKeepAlive(true, 10_000);
    socket.on('connect', () => {
      channel = this.nextId();
      socket.write(encodeFast({ status: FP_STATUS_DATA, msgid: channel, data: fastData('messages', [{ client_id: this.o.clientId, version: 1 }]) }));
    });
    socket.on('data', (chunk: Buffer) => {
      let msgs;
      try {
        msgs = decoder.push(chunk);
      } catch (err) {
        this.stats.badFrames++;
        this.o.log.warn({ err }, 'FWAPI update stream: bad frame; reconnecting');
        socket.destroy();
        return;
      }
      for (const m of msgs) {
        if (m.msgid !== channel) continue;
        if (m.status === FP_STATUS_ERROR) {
          this.o.log.error({ err: decodeFastError(m) }, 'error from messages rpc');
          continue;
        }
        if (m.status === FP_STATUS_END) {
          this.o.log.info('messages rpc closed on other end; restarting');
          socket.destroy();
          continue;
        }
        const item = Array.isArray(m.data.d) ? (m.data.d[0] as Record<string, unknown> | undefined) : undefined;
        if (!item || typeof item !== 'object') continue;
        if (!ready) {
          ready = true;
          const first = !this.started;
          this.started = true;
          this.attempt = 0;
          this.stats.connects++;
          this.o.log.info({ state: item }, 'server state sync complete');
          this.o.onStart(first, item);
          continue;
        }
        this.stats.messages++;
        if (typeof item.name === 'string') this.o.onMessage(item as unknown as StreamMessage);
      }
    });
    socket.on('error', (err) => this.o.log.debug({ err, attempt: this.attempt }, 'FWAPI update stream: connection error'));
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      if (this.stopped) return;
      if (ready) {
        this.stats.restarts++;
        this.attempt = 0;
      }
      // client.js: the first attempt again at once, then 1 s, then 5 s from the tenth.
      const delay = this.attempt <= 1 ? 0 : this.attempt < 10 ? 1000 : 5000;
      this.retryJob = this.o.scheduler.schedule(delay, () => {
        this.retryJob = undefined;
        this.connect();
      });
    });
  }

  private nextId(): number {
    const id = this.msgid;
    this.msgid = this.msgid >= 2 ** 31 - 1 ? 1 : this.msgid + 1;
    return id;
  }
}
