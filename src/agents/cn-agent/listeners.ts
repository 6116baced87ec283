/**
 * Binding one mock CN's listening socket: on a given port, on the next free port of the
 * configured range, or on an ephemeral port. Ports this process already handed out are
 * skipped without a bind attempt; a port another process holds is skipped on EADDRINUSE.
 */
import { readFileSync } from 'node:fs';
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

/**
 * The accept queue of each listener. Node's default (511) is below what the connection guard
 * admits on one port (a quarter of 6,144): past a full queue, with SYN cookies on, a client's
 * connection looks open but never reaches the guard, so it is neither served nor shed. The
 * kernel caps it at net.core.somaxconn; a queue costs nothing until it fills.
 */
const LISTEN_BACKLOG = 2048;

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
    server.listen({ host: ip, port, exclusive: true, backlog: LISTEN_BACKLOG });
  });
}

/**
 * Without a configured range the sockets take ephemeral ports, but chosen here, walking the
 * OS's ephemeral range from a random start, rather than by bind(0): Linux finds a free port for
 * bind(0) by probing linearly, which slows down badly once a few thousand ports are taken
 * (10,000 binds took 6.7 s that way, 0.25 s walked in order). Ports the OS reserves
 * (ip_local_reserved_ports) are left alone. Where the range cannot be read, bind(0) it is.
 */
export interface EphemeralPorts {
  range: PortRange;
  reserved: (port: number) => boolean;
}

const PORT_RANGE_FILE = '/proc/sys/net/ipv4/ip_local_port_range';
const RESERVED_PORTS_FILE = '/proc/sys/net/ipv4/ip_local_reserved_ports';

export function readEphemeralPorts(): EphemeralPorts | undefined {
  let range: PortRange;
  try {
    const [lo, hi] = readFileSync(PORT_RANGE_FILE, 'utf8').trim().split(/\s+/).map(Number);
    if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo! < 1 || hi! > 65535 || lo! > hi!) return undefined;
    range = [lo!, hi!];
  } catch {
    return undefined;
  }
  let reserved: PortRange[] = [];
  try {
    reserved = parseReservedPorts(readFileSync(RESERVED_PORTS_FILE, 'utf8'));
  } catch {
    // no such file: nothing reserved
  }
  return { range, reserved: (port) => reserved.some(([lo, hi]) => port >= lo && port <= hi) };
}

/** `8000,9000-9010` → [[8000,8000],[9000,9010]]; anything unreadable is skipped. */
export function parseReservedPorts(text: string): PortRange[] {
  const out: PortRange[] = [];
  for (const part of text.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (m) out.push([Number(m[1]), Number(m[2] ?? m[1])]);
  }
  return out;
}

export class PortAllocator {
  private readonly inUse = new Set<string>();
  private readonly range: PortRange | undefined;
  private readonly skip: (port: number) => boolean;
  /** Walking the ephemeral range (no range configured): on exhaustion, bind(0) still may work. */
  private readonly ephemeral: boolean;
  private cursor: number;

  /** `ephemeralPorts`: where port-less binds go (tests pass their own; null: always bind(0)). */
  constructor(range: PortRange | undefined, ephemeralPorts: EphemeralPorts | null | undefined = readEphemeralPorts()) {
    validatePortRange(range);
    this.ephemeral = range === undefined && ephemeralPorts !== null && ephemeralPorts !== undefined;
    this.range = range ?? ephemeralPorts?.range;
    this.skip = (range === undefined && ephemeralPorts?.reserved) || (() => false);
    const [lo, hi] = this.range ?? [0, 0];
    this.cursor = this.ephemeral ? lo + Math.floor(Math.random() * (hi - lo + 1)) : lo;
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
      if (this.inUse.has(key(ip, port)) || this.skip(port)) continue;
      try {
        await listen(server, ip, port);
        return this.claim(server, ip);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
      }
    }
    if (this.ephemeral) {
      await listen(server, ip, 0);
      return this.claim(server, ip);
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
