/**
 * Per-CN loopback agent IPs (`--agent-ips loopback`, Linux): every mock CN gets its own
 * 127.x.y.z address as its `CN Agent IP`, so anything that calls `http://<CN Agent IP>:<port>`
 * (CMON scraping cmon-agent on 9163 above all) reaches exactly that CN.
 *
 * Addresses come from a per-data-dir counter in `<data-dir>/agent-ips.json`
 * (`{"next": N, "servers": {"<uuid>": "127.16.0.1", ...}}`), written durably before a CN binds
 * its new address, so a CN keeps its address across restarts. The counter only grows: an
 * address of a removed CN is never handed to another (CNAPI may still hold the old record).
 *
 * The range starts at 127.16.0.1 — far from 127.0.0.1 (the dev headnode, the control API,
 * most test servers) and from 127.0.1.1 (Debian's hostname entry) — and skips host parts
 * .0 and .255, which some tools treat as network / broadcast addresses.
 */
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { MockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';

export const AGENT_IPS_FILE = 'agent-ips.json';

const FIRST_SECOND_OCTET = 16;
const HOSTS_PER_THIRD_OCTET = 254; // .1 - .254
const PER_SECOND_OCTET = 256 * HOSTS_PER_THIRD_OCTET;
/** 127.16.0.1 - 127.254.255.254 */
export const MAX_AGENT_IPS = (255 - FIRST_SECOND_OCTET) * PER_SECOND_OCTET;

/** The n-th address of the range (n from 0). */
export function loopbackAddress(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n >= MAX_AGENT_IPS) {
    throw new MockcloudError('InternalError', `no loopback agent IP number ${n} (range holds ${MAX_AGENT_IPS})`);
  }
  const second = FIRST_SECOND_OCTET + Math.floor(n / PER_SECOND_OCTET);
  const rest = n % PER_SECOND_OCTET;
  const third = Math.floor(rest / HOSTS_PER_THIRD_OCTET);
  const fourth = (rest % HOSTS_PER_THIRD_OCTET) + 1;
  return `127.${second}.${third}.${fourth}`;
}

interface AgentIpsState {
  next: number;
  servers: Record<string, string>;
}

export class LoopbackAgentIps {
  private readonly file: string;
  private state: AgentIpsState = { next: 0, servers: {} };
  private readonly taken = new Set<string>();
  /** Writes run one after another; each writes the state as it is when it starts. */
  private writes: Promise<void> = Promise.resolve();

  constructor(
    dataDir: string,
    private readonly log: Logger,
  ) {
    this.file = path.join(dataDir, AGENT_IPS_FILE);
  }

  /** Read the file (absent = fresh data dir). A damaged file is refused, not silently reset. */
  async load(): Promise<void> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new MockcloudError('InvalidArgument', `${this.file} is not valid JSON: ${(err as Error).message}`);
    }
    const v = value as Partial<AgentIpsState> | null;
    if (!v || typeof v.next !== 'number' || !Number.isInteger(v.next) || v.next < 0 || typeof v.servers !== 'object' || v.servers === null) {
      throw new MockcloudError('InvalidArgument', `${this.file} must hold {"next": <count>, "servers": {<uuid>: <ip>}}`);
    }
    const servers: Record<string, string> = {};
    for (const [uuid, ip] of Object.entries(v.servers)) {
      if (typeof ip !== 'string' || net.isIPv4(ip) === false || !ip.startsWith('127.') || ip === '127.0.0.1') {
        this.log.warn({ server: uuid, ip, file: this.file }, 'ignoring a bad loopback agent IP; the CN gets a new one');
        continue;
      }
      if (this.taken.has(ip)) {
        this.log.warn({ server: uuid, ip, file: this.file }, 'loopback agent IP listed twice; the CN gets a new one');
        continue;
      }
      servers[uuid] = ip;
      this.taken.add(ip);
    }
    this.state = { next: v.next, servers };
  }

  /** This CN's address: the one it had, else the next free one of the range (persisted first). */
  async addressFor(uuid: string): Promise<string> {
    const known = this.state.servers[uuid];
    if (known) return known;
    let ip: string;
    do {
      ip = loopbackAddress(this.state.next++);
    } while (this.taken.has(ip));
    this.state.servers[uuid] = ip;
    this.taken.add(ip);
    await this.persist();
    return ip;
  }

  /** The CN was deleted: forget its address (never handed out again: the counter only grows). */
  async release(uuid: string): Promise<void> {
    const ip = this.state.servers[uuid];
    if (!ip) return;
    delete this.state.servers[uuid];
    this.taken.delete(ip);
    await this.persist();
  }

  get size(): number {
    return this.taken.size;
  }

  private persist(): Promise<void> {
    const write = this.writes.then(() => writeFileDurable(this.file, `${JSON.stringify(this.state, null, 2)}\n`));
    this.writes = write.catch(() => undefined);
    return write;
  }
}
