/**
 * The other end of a migration process's socket, for tests: JSON lines, requests numbered by
 * `eventId` and answered with a `response` or an `error` of the same id, as VMAPI's sync
 * workflow and the sending process speak to them (sdc-vmapi lib/workflows/vm-migration/
 * sync.js; sdc-cn-agent lib/backends/smartos/bin/machine-migrate-send.js,
 * machine-migrate-receive.js). Every wait is bounded.
 */
import net from 'node:net';
import readline from 'node:readline';
import { connect } from './docker-client.js';

type Obj = Record<string, any>;

export class ProcessSocket {
  /** Every line the process sent, parsed, in order. */
  readonly events: Obj[] = [];
  readonly closed: Promise<void>;
  private isClosed = false;
  private nextId = 1;
  private readonly wakers = new Set<() => void>();

  private constructor(private readonly sock: net.Socket) {
    readline.createInterface({ input: sock }).on('line', (line) => {
      if (!line) return;
      this.events.push(JSON.parse(line) as Obj);
      this.wake();
    });
    // A reset is followed by 'close', which is what the waits look at.
    sock.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      sock.once('close', () => {
        this.isClosed = true;
        this.wake();
        resolve();
      }),
    );
  }

  /** `allowHalfOpen` for a conversation that ends its side with raw bytes (`end`). */
  static async open(host: string, port: number, opts: { allowHalfOpen?: boolean } = {}): Promise<ProcessSocket> {
    return new ProcessSocket(await connect(host, port, opts));
  }

  /** One line: an object as JSON, a string as it is. */
  write(line: Obj | string): void {
    this.sock.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
  }

  /** The next request; resolves with its answer. */
  async request(command: Obj, timeoutMs = 30_000): Promise<Obj> {
    const eventId = this.nextId++;
    this.write({ ...command, type: 'request', eventId });
    const answer = (): Obj | undefined =>
      this.events.find((e) => Number(e.eventId) === eventId && (e.type === 'response' || e.type === 'error'));
    await this.until(() => answer() !== undefined, timeoutMs);
    const found = answer();
    if (!found) throw new Error(`no answer to ${String(command.command)}`);
    return found;
  }

  /** Wait until `done()` holds, the peer closed, or `timeoutMs` passed. */
  until(done: () => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (!done() && !this.isClosed) return;
        clearTimeout(limit);
        this.wakers.delete(check);
        resolve();
      };
      const limit = setTimeout(() => {
        this.wakers.delete(check);
        resolve();
      }, timeoutMs);
      this.wakers.add(check);
      check();
    });
  }

  /** Half-close, after `data` (the sender's zfs stream). */
  end(data: Buffer): void {
    this.sock.end(data);
  }

  destroy(): void {
    this.sock.destroy();
  }

  private wake(): void {
    for (const w of [...this.wakers]) w();
  }
}

/**
 * Send `lines` at once (`{raw}` as that text, the rest as requests numbered from 1 in their
 * order), then, after the first answer, `raw` and a half-close (as the sender does once `sync`
 * is answered); the answers until `count` arrived or the peer closed, within 10 s.
 */
export async function converse(host: string, port: number, lines: Obj[], count: number, raw?: Buffer): Promise<Obj[]> {
  const s = await ProcessSocket.open(host, port, { allowHalfOpen: true });
  try {
    for (const [i, l] of lines.entries()) s.write(typeof l.raw === 'string' ? l.raw : { type: 'request', eventId: i + 1, ...l });
    if (raw) {
      await s.until(() => s.events.length >= 1, 10_000);
      s.end(raw);
    }
    await s.until(() => s.events.length >= count, 10_000);
    return [...s.events];
  } finally {
    s.destroy();
  }
}

/** Whether something still listens at host:port. */
export function listening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
