/**
 * What fault events do to the CNs' outbound traffic (to CNAPI, VMAPI, NAPI), through the
 * shared HTTP client's interceptor, installed only while some CN is cut off or some
 * outbound-fault event runs: with no such event, requests pay nothing.
 *
 *   block (partition, offline)  a request of the CN is held, as TCP retransmits into a
 *                               partition: it goes out if the block ends within its timeout
 *                               (the agents catch up by themselves), and fails with the
 *                               client's own timeout error otherwise;
 *   rules (outbound-fault)      a fraction of the requests to an API delayed, and of those a
 *                               fraction failed as a reset connection.
 *
 * Which CN a request is for comes from its User-Agent (`... server/<uuid>`), which every
 * agent sends as the real ones do. Waits are on the daemon's shared scheduler.
 */
import { MockcloudError } from '../common/errors.js';
import type { HttpRequest, JsonHttpClient, OutboundInterceptor } from '../common/http-client.js';
import type { Scheduler } from '../runtime/scheduler.js';
import type { OutboundApi } from './types.js';

export interface OutboundRule {
  servers: ReadonlySet<string>;
  api?: OutboundApi;
  delayMs: number;
  errorRate: number;
  probability: number;
  random: () => number;
  hits: number;
}

interface Block {
  count: number;
  healed: Promise<void>;
  heal: () => void;
}

const SERVER_IN_UA = /\bserver\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/i;

export class NetworkFaults {
  private readonly blocks = new Map<string, Block>();
  private readonly rules = new Set<OutboundRule>();
  private readonly intercept: OutboundInterceptor = (req, timeoutMs) => this.check(req, timeoutMs);

  constructor(
    private readonly http: JsonHttpClient,
    private readonly scheduler: Scheduler,
    private readonly urls: Partial<Record<OutboundApi, string>>,
  ) {}

  /** Cut the CN off (counted: two events blocking it need two unblocks). */
  block(uuid: string): void {
    const b = this.blocks.get(uuid);
    if (b) {
      b.count++;
      return;
    }
    let heal!: () => void;
    const healed = new Promise<void>((resolve) => (heal = resolve));
    this.blocks.set(uuid, { count: 1, healed, heal });
    this.sync();
  }

  unblock(uuid: string): void {
    const b = this.blocks.get(uuid);
    if (!b) return;
    if (--b.count > 0) return;
    this.blocks.delete(uuid);
    b.heal();
    this.sync();
  }

  isBlocked(uuid: string): boolean {
    return this.blocks.has(uuid);
  }

  addRule(rule: OutboundRule): void {
    this.rules.add(rule);
    this.sync();
  }

  removeRule(rule: OutboundRule): void {
    this.rules.delete(rule);
    this.sync();
  }

  /** Everything lets go (the daemon stops): held requests go out, the interceptor goes. */
  releaseAll(): void {
    for (const b of this.blocks.values()) b.heal();
    this.blocks.clear();
    this.rules.clear();
    this.sync();
  }

  private sync(): void {
    const wanted = this.blocks.size > 0 || this.rules.size > 0 ? this.intercept : undefined;
    if (this.http.interceptor !== wanted) this.http.interceptor = wanted;
  }

  private check(req: HttpRequest, timeoutMs: number): Promise<void> | undefined {
    const server = serverOf(req);
    if (server === undefined) return undefined;
    const block = this.blocks.get(server);
    if (block) return this.hold(req, block, timeoutMs);
    if (this.rules.size === 0) return undefined;
    const api = this.apiOf(req.url);
    if (api === undefined) return undefined;
    let delayMs = 0;
    let fail = false;
    for (const rule of this.rules) {
      if (!rule.servers.has(server) || (rule.api !== undefined && rule.api !== api)) continue;
      if (rule.random() >= rule.probability) continue;
      rule.hits++;
      delayMs += rule.delayMs;
      if (!fail && rule.errorRate > 0 && rule.random() < rule.errorRate) fail = true;
    }
    if (delayMs === 0 && !fail) return undefined;
    return new Promise<void>((resolve, reject) => {
      const go = (): void => {
        if (delayMs >= timeoutMs) reject(timeoutError(req, timeoutMs));
        else if (fail) reject(resetError(req));
        else resolve();
      };
      if (delayMs > 0) this.scheduler.schedule(Math.min(delayMs, timeoutMs), go);
      else go();
    });
  }

  private hold(req: HttpRequest, block: Block, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const job = this.scheduler.schedule(timeoutMs, () => reject(timeoutError(req, timeoutMs)));
      void block.healed.then(() => {
        if (job.cancelled) return;
        this.scheduler.cancel(job);
        resolve();
      });
    });
  }

  private apiOf(url: string): OutboundApi | undefined {
    for (const api of ['cnapi', 'vmapi', 'napi'] as const) {
      const base = this.urls[api];
      if (base && url.startsWith(base)) return api;
    }
    return undefined;
  }
}

function serverOf(req: HttpRequest): string | undefined {
  const ua = req.headers?.['user-agent'];
  if (ua === undefined) return undefined;
  return SERVER_IN_UA.exec(ua)?.[1]?.toLowerCase();
}

/** What the client itself says when a peer does not answer in time. */
function timeoutError(req: HttpRequest, timeoutMs: number): MockcloudError {
  return new MockcloudError('GatewayTimeout', `${req.method} ${req.url}: timed out after ${timeoutMs} ms (no answer)`);
}

function resetError(req: HttpRequest): Error {
  const err = new Error(`${req.method} ${req.url}: socket hang up`) as NodeJS.ErrnoException;
  err.code = 'ECONNRESET';
  return err;
}
