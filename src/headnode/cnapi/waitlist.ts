/**
 * CNAPI's waitlist (sdc-cnapi lib/models/waitlist.js): tickets queue per (server, scope, id);
 * in each queue at most one ticket is `active`, the oldest `queued` one becomes active when the
 * active one is released (`finished`), deleted or `expired`. A director checks expiry every
 * 500 ms and wakes waiters when their ticket turns active or expires.
 *
 * With a timing (docs/timing.md `waitlist.activation`), a ticket becomes active only when the
 * director's next round notices its queue is free, as CNAPI's does (WAITLIST_PERIOD_MS): up
 * to 500 ms after it was created or the ticket before it released, on the smartos profile.
 */
import { randomUUID } from 'node:crypto';
import type { Pacing } from '../../timing/wait.js';

export type TicketStatus = 'queued' | 'active' | 'finished' | 'expired';

export interface WaitlistTicket {
  action?: string;
  created_at: string;
  expires_at: string;
  extra: Record<string, unknown>;
  id: string;
  reqid?: string;
  scope: string;
  server_uuid: string;
  status: TicketStatus;
  updated_at: string;
  uuid: string;
}

/** How often the director looks for expired tickets (WAITLIST_PERIOD_MS). */
export const WAITLIST_PERIOD_MS = 500;
/** Finished and expired tickets older than this are cleaned up (WAITLIST_CLEANUP_MAX_AGE_MS). */
const CLEANUP_MAX_AGE_MS = 30 * 24 * 3600 * 1000;

type Waiter = (err?: Error) => void;

export class Waitlist {
  private readonly tickets = new Map<string, WaitlistTicket>();
  private readonly waiters = new Map<string, Waiter[]>();
  private timer: NodeJS.Timeout | undefined;
  private readonly onChange: () => void;
  private readonly pacing: Pacing | undefined;
  /** Queues whose next activation waits for the director's round. */
  private readonly activating = new Set<string>();

  constructor(opts: { onChange: () => void; pacing?: Pacing | undefined }) {
    this.onChange = opts.onChange;
    this.pacing = opts.pacing;
  }

  restore(records: unknown): void {
    this.tickets.clear();
    if (!Array.isArray(records)) return;
    for (const t of records as WaitlistTicket[]) if (t && typeof t.uuid === 'string') this.tickets.set(t.uuid, t);
  }

  snapshot(): WaitlistTicket[] {
    return [...this.tickets.values()];
  }

  start(): void {
    this.timer = setInterval(() => this.expire(), WAITLIST_PERIOD_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const [, list] of this.waiters) for (const w of list) w(new Error('CNAPI is stopping'));
    this.waiters.clear();
  }

  get(uuid: string): WaitlistTicket | undefined {
    return this.tickets.get(uuid);
  }

  /** A server's tickets, sorted by `attribute` (created_at) in `order` (ASC), paged. */
  list(opts: { server_uuid: string; limit?: number; offset?: number; attribute?: string; order?: string }): WaitlistTicket[] {
    const attr = opts.attribute ?? 'created_at';
    const desc = (opts.order ?? 'ASC').toUpperCase() === 'DESC';
    const out = [...this.tickets.values()]
      .filter((t) => t.server_uuid === opts.server_uuid)
      .sort((a, b) => {
        const x = String((a as unknown as Record<string, unknown>)[attr] ?? '');
        const y = String((b as unknown as Record<string, unknown>)[attr] ?? '');
        return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1);
      });
    const offset = opts.offset ?? 0;
    return out.slice(offset, offset + (opts.limit ?? 1000));
  }

  /** A new queued ticket; the queue's oldest queued ticket is activated if none is active. */
  create(p: {
    server_uuid: string;
    scope: string;
    id: string;
    expires_at: string;
    action?: string;
    req_id?: string;
    extra?: Record<string, unknown>;
  }): { uuid: string; queue: WaitlistTicket[] } {
    const now = new Date().toISOString();
    const ticket: WaitlistTicket = {
      ...(p.action !== undefined ? { action: p.action } : {}),
      created_at: now,
      expires_at: p.expires_at,
      extra: p.extra ?? {},
      id: p.id,
      ...(p.req_id !== undefined ? { reqid: p.req_id } : {}),
      scope: p.scope,
      server_uuid: p.server_uuid,
      status: 'queued',
      updated_at: now,
      uuid: randomUUID(),
    };
    this.tickets.set(ticket.uuid, ticket);
    this.activateNext(ticket);
    this.onChange();
    return { uuid: ticket.uuid, queue: this.queue(ticket) };
  }

  /** Release (finished) or expire a ticket; undefined when there is no such ticket. */
  finish(uuid: string, status: 'finished' | 'expired'): WaitlistTicket | undefined {
    const t = this.tickets.get(uuid);
    if (!t) return undefined;
    t.status = status;
    t.updated_at = new Date().toISOString();
    this.activateNext(t);
    this.onChange();
    return t;
  }

  delete(uuid: string): boolean {
    const t = this.tickets.get(uuid);
    if (!t) return false;
    this.tickets.delete(uuid);
    this.activateNext(t);
    this.onChange();
    return true;
  }

  deleteAll(serverUuid: string): void {
    for (const [uuid, t] of this.tickets) if (t.server_uuid === serverUuid) this.tickets.delete(uuid);
    this.onChange();
  }

  /**
   * Resolves once the ticket is active; rejects with "no such ticket", "ticket <uuid> is
   * expired" or, for a waiter still waiting when it expires, "ticket has expired".
   */
  wait(uuid: string): Promise<void> {
    const t = this.tickets.get(uuid);
    if (!t) return Promise.reject(new Error(`no such ticket ${uuid}`));
    if (t.status === 'active') return Promise.resolve();
    if (t.status === 'expired') return Promise.reject(new Error(`ticket ${uuid} is expired`));
    return new Promise((resolve, reject) => {
      const list = this.waiters.get(uuid) ?? [];
      list.push((err) => (err ? reject(err) : resolve()));
      this.waiters.set(uuid, list);
    });
  }

  /** Provisioning tickets still open (what DAPI counts). */
  openProvisionTickets(): WaitlistTicket[] {
    return [...this.tickets.values()].filter(
      (t) => t.scope === 'vm' && t.action === 'provision' && (t.status === 'active' || t.status === 'queued'),
    );
  }

  /** Forget finished and expired tickets not updated for 30 days. */
  cleanup(now = Date.now()): void {
    const limit = new Date(now - CLEANUP_MAX_AGE_MS).toISOString();
    let n = 0;
    for (const [uuid, t] of this.tickets) {
      if ((t.status === 'finished' || t.status === 'expired') && t.updated_at < limit) {
        this.tickets.delete(uuid);
        n++;
      }
    }
    if (n > 0) this.onChange();
  }

  /** The queue a ticket is in: its active and queued tickets, oldest first. */
  private queue(t: WaitlistTicket): WaitlistTicket[] {
    return [...this.tickets.values()]
      .filter((x) => x.server_uuid === t.server_uuid && x.scope === t.scope && x.id === t.id)
      .filter((x) => x.status === 'active' || x.status === 'queued')
      .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  }

  /** activateOneTicket: with no active ticket in the queue, the oldest queued one becomes active. */
  private activateNext(t: WaitlistTicket): void {
    const q = this.queue(t);
    if (q.length === 0 || q.some((x) => x.status === 'active')) return;
    const delay = this.pacing?.ms('waitlist.activation') ?? 0;
    if (delay > 0) {
      const key = `${t.server_uuid}/${t.scope}/${t.id}`;
      if (this.activating.has(key)) return;
      this.activating.add(key);
      void this.pacing!.wait(delay).then(() => {
        this.activating.delete(key);
        this.activateNow(t);
        this.onChange();
      });
      return;
    }
    this.activateNow(t);
  }

  private activateNow(t: WaitlistTicket): void {
    const q = this.queue(t);
    if (q.length === 0 || q.some((x) => x.status === 'active')) return;
    const next = q[0]!;
    next.status = 'active';
    next.updated_at = new Date().toISOString();
    this.wake(next.uuid);
  }

  private wake(uuid: string, err?: Error): void {
    const list = this.waiters.get(uuid);
    if (!list) return;
    this.waiters.delete(uuid);
    for (const w of list) w(err);
  }

  /** The director's round: expire what is past its `expires_at`. */
  private expire(now = new Date().toISOString()): void {
    for (const t of [...this.tickets.values()]) {
      if (t.status !== 'finished' && t.status !== 'expired' && now > t.expires_at) {
        this.finish(t.uuid, 'expired');
        this.wake(t.uuid, new Error('ticket has expired'));
      }
    }
  }
}
