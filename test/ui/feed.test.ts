/**
 * The fleet page's feed (src/ui/feed.ts) against a stand-in fleet: a page gets the whole fleet
 * once, then only what changed (a CN's state, its VM count, who heartbeated, CNs added and
 * removed); with no page connected it keeps no per-CN state; its one job is on the scheduler.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/common/log.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import { FleetFeed, TICK_MS } from '../../src/ui/feed.js';
import { CELL_STATES, type FleetSource, type PageCn } from '../../src/ui/source.js';
import type { EventView } from '../../src/events/types.js';

interface FakeCn {
  uuid: string;
  hostname: string;
  profile: string;
  power: 'up' | 'down';
  registered: boolean;
  sysinfo: Record<string, unknown>;
  vms: { size: number };
}

function fleet(n: number) {
  const cns: FakeCn[] = [];
  for (let i = 0; i < n; i++) {
    cns.push({ uuid: `00000000-0000-4000-8000-00000000000${i}`, hostname: `cn${i}`, profile: 'small', power: 'up', registered: true, sysinfo: {}, vms: { size: 0 } });
  }
  const hb = new Map<string, number>();
  const events: EventView[] = [];
  const counters = { heartbeats: 0, tasks: 0, tasksAnswered: 0, taskMsTotal: 0, errors: 0 };
  const source: FleetSource = {
    list: () => cns as unknown as PageCn[],
    get: (u) => cns.find((c) => c.uuid === u) as unknown as PageCn,
    lastHeartbeatAt: (u) => hb.get(u),
    heartbeatIntervalMs: 5000,
    heartbeats: true,
    activeEvents: () => events,
    // As the engine holds an offline CN down and cuts a partitioned one off.
    faultState: (u) =>
      events.some((e) => e.type === 'offline' && e.servers.includes(u)) ? 'offline' : events.some((e) => e.type === 'partition' && e.servers.includes(u)) ? 'partitioned' : undefined,
    eventLogPath: '/nonexistent',
    taskHistory: () => [],
    counters: () => ({ ...counters }),
    startEvent: async () => ({}),
    endEvent: async () => ({}),
  };
  return { cns, hb, events, counters, source };
}

type Msg = { t: string; cells?: unknown[][]; added: unknown[][]; removed: number[]; changed: number[][]; hb: number[]; point?: Record<string, number>; totals: { cns: number; vms: number } };

function setup(n: number) {
  const f = fleet(n);
  const scheduler = new Scheduler();
  const feed = new FleetFeed(f.source, scheduler, createLogger({ name: 'feed-test', level: 'fatal' }));
  const got: Msg[] = [];
  const client = { send: (m: string) => got.push(JSON.parse(m) as Msg) };
  // A tick comes a second after the one before, as the scheduler runs it (the clock is the test's).
  const tick = (): void => {
    vi.setSystemTime(Date.now() + TICK_MS);
    (feed as unknown as { tick(): void }).tick();
  };
  return { ...f, scheduler, feed, got, client, tick };
}

describe('the fleet page feed', () => {
  beforeEach(() => void vi.useFakeTimers({ toFake: ['Date'], now: Date.now() }));
  afterEach(() => void vi.useRealTimers());

  it('sends a snapshot, then only what changed, once a tick', () => {
    const t = setup(3);
    const now = Date.now();
    for (const cn of t.cns) t.hb.set(cn.uuid, now);
    t.feed.start();
    expect(t.scheduler.size).toBe(1);
    t.feed.add(t.client);
    expect(t.got[0]!.t).toBe('snapshot');
    expect(t.got[0]!.cells).toHaveLength(3);
    expect(t.got[0]!.cells!.map((c) => CELL_STATES[c[4] as number])).toEqual(['running', 'running', 'running']);

    t.tick();
    expect(t.got[1]).toMatchObject({ t: 'delta', added: [], removed: [], changed: [], hb: [] });

    // CN 1 goes down under an offline event, CN 2 gets a VM, CN 0 heartbeats.
    t.cns[1]!.power = 'down';
    t.events.push({ id: 'e', type: 'offline', servers: [t.cns[1]!.uuid], startedAt: new Date().toISOString(), params: {} });
    t.cns[2]!.vms.size = 1;
    t.hb.set(t.cns[0]!.uuid, now + 1);
    t.counters.heartbeats += 3;
    t.tick();
    const d = t.got[2]!;
    expect(d.changed).toEqual([
      [1, CELL_STATES.indexOf('offline'), 0],
      [2, CELL_STATES.indexOf('running'), 1],
    ]);
    expect(d.hb).toEqual([0]);
    expect(d.totals).toMatchObject({ cns: 3, vms: 1 });
    expect(d.point!.heartbeatsPerSecond).toBeGreaterThan(0);

    // A CN added and one removed.
    const gone = t.cns.shift()!;
    t.cns.push({ ...gone, uuid: '00000000-0000-4000-8000-000000000009', hostname: 'cn9' });
    t.tick();
    expect(t.got[3]!.removed).toEqual([0]);
    expect(t.got[3]!.added.map((c) => c[2])).toEqual(['cn9']);
    t.feed.stop();
  });

  it('keeps no per-CN state and sends nothing while no page is connected', () => {
    const t = setup(2);
    t.feed.start();
    t.feed.add(t.client);
    t.feed.remove(t.client);
    const before = t.got.length;
    t.tick();
    expect(t.got.length).toBe(before);
    expect((t.feed as unknown as { uuids: unknown[] }).uuids).toEqual([]);
    t.feed.stop();
  });

  it('marks a CN late when its last heartbeat is older than two intervals and a second, partitioned under a partition event', () => {
    const t = setup(2);
    t.hb.set(t.cns[0]!.uuid, Date.now() - 12_000);
    t.hb.set(t.cns[1]!.uuid, Date.now());
    t.events.push({ id: 'p', type: 'partition', servers: [t.cns[1]!.uuid], startedAt: new Date().toISOString(), params: {} });
    t.feed.add(t.client);
    expect(t.got[0]!.cells!.map((c) => CELL_STATES[c[4] as number])).toEqual(['late', 'partitioned']);
  });

  it('counts heartbeats per second over two intervals, steady though the CNs beat in bursts, and gives a page that connects the rate at once', () => {
    // 100 CNs started together beat in one burst every 5 s: a one-second count reads 100, 0, 0, 0, 0.
    const t = setup(1);
    t.feed.start();
    expect(t.feed.windowSeconds).toBe(10);
    const rates: number[] = [];
    for (let s = 1; s <= 30; s++) {
      if (s % 5 === 0) t.counters.heartbeats += 100;
      t.tick();
      if (s >= 10) rates.push((t.feed as unknown as { series: { heartbeatsPerSecond: number }[] }).series.at(-1)!.heartbeatsPerSecond);
    }
    expect(new Set(rates)).toEqual(new Set([20]));
    t.feed.add(t.client);
    expect(t.got[0]).toMatchObject({ t: 'snapshot', heartbeatsPerSecond: 20, windowSeconds: 10 });
    t.feed.stop();
  });
});
