/**
 * A migration process as the daemon hosts it: the real agent forks machine-migrate-send.js
 * or machine-migrate-receive.js, which listens on the CN's admin IP, reports
 * `{event: 'setup completed', host, pid, port}` (the task's finish value) and then takes
 * newline-delimited JSON commands. Here it is a TCP listener on the CN's cn-agent address
 * with a per-CN pid, gone when it ends itself (`stop`/`end`), when kill_migration_process
 * names its pid, when the CN is detached, or after an hour with no connection activity (a
 * real process would wait for VMAPI forever).
 */
import net from 'node:net';
import type { TaskContext } from '../types.js';
import { migrationState, type MigrationProcess } from './state.js';

const IDLE_LIMIT_MS = 60 * 60 * 1000;
/** A command line longer than this is not a command (a real process would run out of memory). */
const MAX_LINE = 16 * 1024 * 1024;

export interface SetupCompleted extends Record<string, unknown> {
  event: 'setup completed';
  host: string;
  pid: number;
  port: number;
}

/** What both processes report as their version (`ping`, errors). */
export const PROCESS_VERSION = '1.0.0';

export function writeEvent(sock: net.Socket, event: Record<string, unknown>): void {
  if (sock.destroyed || !sock.writable) return;
  sock.write(`${JSON.stringify(event)}\n`);
}

/** A command's answer: `{type: 'response', command, eventId, ...extra}`. */
export function respond(sock: net.Socket, event: Record<string, unknown>, extra: Record<string, unknown> = {}): void {
  writeEvent(sock, { type: 'response', command: event.command, eventId: event.eventId, ...extra });
}

/** A command's failure: `{type: 'error', command, eventId, message, ...extra}`. */
export function refuse(sock: net.Socket, event: Record<string, unknown>, message: string, extra: Record<string, unknown> = {}): void {
  writeEvent(sock, { type: 'error', command: event.command, eventId: event.eventId, message, ...extra });
}

/**
 * Split a socket's bytes into lines for `onLine` until `takeRaw` is called; from then on
 * (including whatever followed the last line in the same chunk) bytes go to `onRaw`.
 */
export class LineReader {
  private buf: Buffer = Buffer.alloc(0);
  private raw: ((chunk: Buffer) => void) | undefined;

  constructor(
    sock: net.Socket,
    private readonly onLine: (line: string) => void,
    onTooLong: () => void,
  ) {
    sock.on('data', (chunk: Buffer) => {
      if (this.raw) {
        this.raw(chunk);
        return;
      }
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
      this.drain();
      if (!this.raw && this.buf.length > MAX_LINE) {
        this.buf = Buffer.alloc(0);
        onTooLong();
      }
    });
  }

  /** Stop reading lines: everything from here on is raw data. */
  takeRaw(onRaw: (chunk: Buffer) => void): void {
    this.raw = onRaw;
    const rest = this.buf;
    this.buf = Buffer.alloc(0);
    if (rest.length > 0) onRaw(rest);
  }

  private drain(): void {
    for (;;) {
      if (this.raw) return;
      const nl = this.buf.indexOf(0x0a);
      if (nl < 0) return;
      const line = this.buf.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      this.buf = this.buf.subarray(nl + 1);
      if (line.length > 0) this.onLine(line);
    }
  }
}

export abstract class MigrationListener implements MigrationProcess {
  readonly pid: number;
  protected readonly server: net.Server;
  protected readonly sockets = new Set<net.Socket>();
  protected readonly log: TaskContext['log'];
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly unregister: () => void;

  constructor(
    ctx: TaskContext,
    readonly vmUuid: string,
  ) {
    const forget = ctx.untilDetach(() => this.kill());
    const state = migrationState(ctx);
    this.pid = state.nextPid++;
    this.log = ctx.log;
    this.server = net.createServer({ allowHalfOpen: true }, (sock) => this.accept(sock));
    this.server.on('error', (err) => this.log.warn({ err }, 'migration listener error'));
    state.processes.set(this.pid, this);
    this.unregister = () => {
      state.processes.delete(this.pid);
      forget();
    };
  }

  /** Listen on the CN's address; the finish value of the task that started it. */
  async listen(host: string): Promise<SetupCompleted> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.touch();
    const port = (this.server.address() as net.AddressInfo).port;
    this.log.info('MigrationTask listening on socket %j', { address: host, port });
    return { event: 'setup completed', host, pid: this.pid, port };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** End the process: no more connections; open ones are ended (then cut). */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.unregister();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.server.close();
    this.onEnd();
    for (const sock of this.sockets) {
      sock.end();
      setTimeout(() => sock.destroy(), 1000).unref();
    }
  }

  kill(): void {
    this.end();
    for (const sock of this.sockets) sock.destroy();
  }

  /** Something happened: the idle limit starts again. */
  protected touch(): void {
    if (this.closed) return;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.log.warn('migration process idle for an hour: ending it');
      this.kill();
    }, IDLE_LIMIT_MS);
    this.idleTimer.unref();
  }

  /** `stop` (the sender's `end` too): answered, then the process ends. */
  protected commandStop(sock: net.Socket, event: Record<string, unknown>): void {
    this.log.info('commandStop');
    respond(sock, event);
    this.end();
  }

  /** `ping`: the process's pid and version. */
  protected commandPing(sock: net.Socket, event: Record<string, unknown>): void {
    respond(sock, event, { pid: this.pid, version: PROCESS_VERSION });
  }

  /** Called once when the process ends (abort work in progress). */
  protected onEnd(): void {}

  protected abstract onCommand(sock: net.Socket, event: Record<string, unknown>, reader: LineReader): void;

  private accept(sock: net.Socket): void {
    if (this.closed) {
      sock.destroy();
      return;
    }
    this.sockets.add(sock);
    this.touch();
    this.log.info('got connection from %j', sock.remoteAddress);
    sock.on('error', (err) => this.log.warn({ err }, 'migration socket error'));
    sock.on('close', () => this.sockets.delete(sock));
    const reader: LineReader = new LineReader(
      sock,
      (line) => {
        this.touch();
        let event: unknown;
        try {
          event = JSON.parse(line);
        } catch {
          this.log.error('invalid json: %s - ignoring', line.slice(0, 200));
          return;
        }
        if (typeof event !== 'object' || event === null || Array.isArray(event)) {
          this.log.error('not a command: %s - ignoring', line.slice(0, 200));
          return;
        }
        this.onCommand(sock, event as Record<string, unknown>, reader);
      },
      () => sock.destroy(),
    );
  }
}
