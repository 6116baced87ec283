/**
 * The NAPI networks the fleet's NICs are on, polled ONCE for the whole daemon (the original
 * polled each network once per CN): `GET /networks/<uuid>` when a network is first referenced
 * and every `pollMs` (jittered) after. When a property NAPI pushes down to VMs changes (gateway,
 * mtu, netmask, nic_tag, resolvers, routes, vlan_id), `onChanged` tells the agent to re-read
 * every NIC on that network. This is how NAPI edits reach VMs without a changefeed.
 */
import type { Logger } from '../../common/log.js';
import { Scheduler, type ScheduledJob } from '../../runtime/scheduler.js';
import type { NapiCalls } from './napi.js';

const WATCHED_FIELDS = ['gateway', 'mtu', 'netmask', 'nic_tag', 'resolvers', 'routes', 'vlan_id'] as const;

interface Watched {
  users: number;
  fingerprint: string | undefined;
  job: ScheduledJob | undefined;
  busy: boolean;
}

export interface NetworkWatchOptions {
  napi: NapiCalls;
  scheduler: Scheduler;
  log: Logger;
  pollMs: number;
  userAgent: () => string;
  onChanged(networkUuid: string): void;
}

export class NetworkWatch {
  private readonly nets = new Map<string, Watched>();
  private running = false;

  constructor(private readonly o: NetworkWatchOptions) {}

  get size(): number {
    return this.nets.size;
  }

  start(): void {
    this.running = true;
    for (const [uuid, w] of this.nets) if (!w.job) this.schedule(uuid, w, 0);
  }

  stop(): void {
    this.running = false;
    for (const w of this.nets.values()) {
      this.o.scheduler.cancel(w.job);
      w.job = undefined;
    }
  }

  /** One more NIC on this network. */
  add(uuid: string): void {
    let w = this.nets.get(uuid);
    if (!w) {
      w = { users: 0, fingerprint: undefined, job: undefined, busy: false };
      this.nets.set(uuid, w);
      if (this.running) this.schedule(uuid, w, 0);
    }
    w.users++;
  }

  /** One NIC fewer on this network; the last one ends the polling. */
  remove(uuid: string): void {
    const w = this.nets.get(uuid);
    if (!w) return;
    if (--w.users > 0) return;
    this.o.scheduler.cancel(w.job);
    this.nets.delete(uuid);
  }

  /** A changefeed item named this network: poll it now. */
  pollNow(uuid: string): void {
    const w = this.nets.get(uuid);
    if (!w || !this.running || w.busy) return;
    this.o.scheduler.cancel(w.job);
    this.schedule(uuid, w, 0);
  }

  private schedule(uuid: string, w: Watched, delayMs: number): void {
    w.job = this.o.scheduler.schedule(delayMs, () => {
      w.job = undefined;
      void this.poll(uuid, w);
    });
  }

  private async poll(uuid: string, w: Watched): Promise<void> {
    if (!this.running || this.nets.get(uuid) !== w) return;
    w.busy = true;
    try {
      const net = await this.o.napi.getNetwork(uuid, this.o.userAgent());
      if (net) {
        const fp = JSON.stringify(WATCHED_FIELDS.map((f) => net[f] ?? null));
        const changed = w.fingerprint !== undefined && w.fingerprint !== fp;
        w.fingerprint = fp;
        if (changed) {
          this.o.log.info({ network: uuid }, 'NAPI network changed: re-reading its NICs');
          this.o.onChanged(uuid);
        }
      }
    } catch (err) {
      this.o.log.debug({ err, network: uuid }, 'network poll failed');
    } finally {
      w.busy = false;
    }
    if (this.running && this.nets.get(uuid) === w && !w.job) this.schedule(uuid, w, Scheduler.jitter(this.o.pollMs));
  }
}
