/**
 * CNAPI's heartbeat handling (sdc-cnapi lib/endpoints/servers.js eventHeartbeat,
 * lib/heartbeat_reconciler.js): a beat only records the time in memory; one reconciler
 * timer for all servers then, every 5 s, writes `status` for servers that are new to it
 * (`running`) or whose last beat is older than 11 s (`unknown`, and forgotten until the
 * next beat). At start every `running` server is seeded with a 1970 beat, so it turns
 * `unknown` unless it beats.
 */
import type { Logger } from '../../common/log.js';
import { ServerNotFound, type ServerRegistry } from './servers.js';

export const HEARTBEAT_RECONCILIATION_PERIOD_MS = 5_000;
export const HEARTBEAT_LIFETIME_MS = 11_000;

interface Observed {
  lastHeartbeat: number;
  /** When the reconciler last wrote for this server; undefined = new to us. */
  lastStatusUpdate?: number;
}

export interface HeartbeatOptions {
  servers: ServerRegistry;
  log: Logger;
  periodMs?: number;
  lifetimeMs?: number;
  /** Called after the reconciler changed any server's status (for persistence). */
  onStatusChange?: (uuid: string, status: string) => void;
}

export class HeartbeatReconciler {
  private readonly observed = new Map<string, Observed>();
  private readonly servers: ServerRegistry;
  private readonly log: Logger;
  private readonly onStatusChange: ((uuid: string, status: string) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  readonly periodMs: number;
  readonly lifetimeMs: number;
  /** Counters for diagnostics. */
  stats = { beats: 0, newHeartbeaters: 0, staleHeartbeaters: 0 };

  constructor(opts: HeartbeatOptions) {
    this.servers = opts.servers;
    this.log = opts.log;
    this.onStatusChange = opts.onStatusChange;
    this.periodMs = opts.periodMs ?? HEARTBEAT_RECONCILIATION_PERIOD_MS;
    this.lifetimeMs = opts.lifetimeMs ?? HEARTBEAT_LIFETIME_MS;
  }

  start(): void {
    for (const s of this.servers.list()) {
      if (s.status === 'running' && !this.observed.has(s.uuid)) this.observed.set(s.uuid, { lastHeartbeat: 0 });
    }
    this.timer = setInterval(() => this.reconcile(Date.now()), this.periodMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  beat(uuid: string, now = Date.now()): void {
    this.stats.beats++;
    const o = this.observed.get(uuid);
    if (o) o.lastHeartbeat = now;
    else this.observed.set(uuid, { lastHeartbeat: now });
  }

  /** The deprecated `last_heartbeat` field: ISO time of the last beat seen, or null. */
  lastHeartbeat(uuid: string): string | null {
    const o = this.observed.get(uuid);
    return o && o.lastHeartbeat > 0 ? new Date(o.lastHeartbeat).toISOString() : null;
  }

  forget(uuid: string): void {
    this.observed.delete(uuid);
  }

  /** One reconciliation pass; exposed so tests can drive it without waiting. */
  reconcile(now: number): void {
    const staleBefore = now - this.lifetimeMs;
    for (const [uuid, o] of [...this.observed]) {
      const isNew = o.lastStatusUpdate === undefined;
      const isStale = o.lastHeartbeat < staleBefore;
      if (!isNew && !isStale) continue;
      if (isNew) this.stats.newHeartbeaters++;
      o.lastStatusUpdate = now;
      const status = isStale ? 'unknown' : 'running';
      if (isStale) {
        this.stats.staleHeartbeaters++;
        this.observed.delete(uuid);
      }
      try {
        const r = this.servers.upsert(uuid, { status }, { allowCreate: false });
        if (r.modified) this.onStatusChange?.(uuid, status);
      } catch (err) {
        if (err instanceof ServerNotFound) {
          this.log.debug({ server_uuid: uuid }, 'heartbeat from a server CNAPI does not know');
        } else {
          this.log.error({ err, server_uuid: uuid }, 'failed to update server status');
        }
      }
    }
  }
}
