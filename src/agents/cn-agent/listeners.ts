/**
 * Binding one mock CN's listening socket: on a given port, on port 0 (the OS picks), or on
 * the next free port of the configured range. Ports this process already handed out are
 * skipped without a bind attempt; a port another process holds is skipped on EADDRINUSE.
 */
import net from 'node:net';
import { MockcloudError } from '../../common/errors.js';

export type PortRange = readonly [number, number];

export function validatePortRange(range: PortRange | undefined): void {
  if (range === undefined) return;
  const [lo, hi] = range;
  if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo < 1 || hi > 65535 || lo > hi) {
    throw new MockcloudError('InvalidArgument', `port range must be LO-HI within 1-65535 (got ${lo}-${hi})`);
  }
}

export function listen(server: net.Server, ip: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      server.removeListener('listening', onListening);
      reject(err);
    };
    const onListening = () => {
      server.removeListener('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ host: ip, port, exclusive: true });
  });
}

export class PortAllocator {
  private readonly inUse = new Set<string>();
  private cursor: number;

  constructor(private readonly range: PortRange | undefined) {
    validatePortRange(range);
    this.cursor = range ? range[0] : 0;
  }

  /** Bind `server` on `ip`: the requested port, else the range's next free port, else port 0. */
  async bind(server: net.Server, ip: string, requested?: number): Promise<number> {
    if (requested !== undefined || !this.range) {
      const port = requested ?? 0;
      await listen(server, ip, port);
      return this.claim(server, ip);
    }
    const [lo, hi] = this.range;
    const span = hi - lo + 1;
    for (let tried = 0; tried < span; tried++) {
      const port = this.cursor;
      this.cursor = port >= hi ? lo : port + 1;
      if (this.inUse.has(key(ip, port))) continue;
      try {
        await listen(server, ip, port);
        return this.claim(server, ip);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
      }
    }
    throw new MockcloudError('ServiceUnavailable', `no free port in ${lo}-${hi} on ${ip}`);
  }

  release(ip: string, port: number): void {
    this.inUse.delete(key(ip, port));
  }

  private claim(server: net.Server, ip: string): number {
    const port = (server.address() as net.AddressInfo).port;
    this.inUse.add(key(ip, port));
    return port;
  }
}

function key(ip: string, port: number): string {
  return `${ip}|${port}`;
}
