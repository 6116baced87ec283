/**
 * Task admission: tasks run within a fleet-wide and a per-CN bound, the rest wait in one
 * queue, and beyond the queue's bound a task is refused with the 503 a real cn-agent answers
 * when it takes no work (sdc-cn-agent lib/server.js: ServiceUnavailableError), never by
 * dropping its connection.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { Harness, history, postTask, type TestCn } from './helpers.js';

function overlaps(entries: { started_at: string; finished_at?: string }[]): number {
  let most = 0;
  for (const e of entries) {
    const t = Date.parse(e.started_at);
    most = Math.max(
      most,
      entries.filter((o) => Date.parse(o.started_at) <= t && Date.parse(o.finished_at ?? e.started_at) > t).length,
    );
  }
  return most;
}

describe('cn-agent task admission', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('runs at most the per-CN bound on one CN and the fleet bound in all; another CN is not held up', async () => {
    h = await Harness.create({ admissionLimits: { maxInFlight: 3, maxPerCn: 1, maxQueued: 50 } });
    const a = await h.addCn();
    const b = await h.addCn();
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, h!.server.admission.stats().inFlight)), 5);
    try {
      const onA = Array.from({ length: 4 }, () => postTask(a, 'nop', { sleep: 0.3 }));
      await new Promise((r) => setTimeout(r, 50));
      const t0 = Date.now();
      const onB = await postTask(b, 'nop', { sleep: 0.3 });
      expect(onB.status).toBe(200);
      // B waited for nothing of A's: one 0.3 s nap, not A's queue of four.
      expect(Date.now() - t0).toBeLessThan(900);
      expect((await Promise.all(onA)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    } finally {
      clearInterval(sampler);
    }
    expect(overlaps(await history(a))).toBe(1);
    expect(most).toBeLessThanOrEqual(3);
    expect(h.server.admission.stats()).toMatchObject({ inFlight: 0, queued: 0, refused: 0 });
    expect(h.server.admission.stats().waited).toBeGreaterThanOrEqual(3);
  });

  it('refuses tasks beyond the queue with 503 ServiceUnavailable and Retry-After; every task it took completes', async () => {
    h = await Harness.create({ admissionLimits: { maxInFlight: 2, maxPerCn: 2, maxQueued: 3 } });
    const a = await h.addCn();
    const replies = await Promise.all(Array.from({ length: 10 }, () => postTask(a, 'nop', { sleep: 0.2 })));
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 503);
    expect(ok.length).toBe(5);
    expect(refused.length).toBe(5);
    for (const r of refused) {
      expect(r.body).toEqual({ code: 'ServiceUnavailable', message: expect.stringMatching(/^CN Agent is not accepting tasks/) });
      expect(r.headers.get('retry-after')).toBe('1');
    }
    expect(h.server.admission.stats()).toMatchObject({ inFlight: 0, queued: 0, refused: 5 });
    // A refused task never ran: only the five taken are in the history.
    expect((await history(a)).length).toBe(5);
  });

  it('drops a waiting task whose client went away, without running it', async () => {
    h = await Harness.create({ admissionLimits: { maxInFlight: 1, maxPerCn: 1, maxQueued: 10 } });
    const a = await h.addCn();
    const first = postTask(a, 'nop', { sleep: 0.4 });
    await new Promise((r) => setTimeout(r, 50));
    const { hostname, port } = new URL(a.url);
    const req = http.request({ host: hostname, port, method: 'POST', path: '/tasks', headers: { 'content-type': 'application/json', 'x-server-uuid': a.uuid } });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ task: 'nop', params: { marker: 'abandoned' } }));
    for (let i = 0; i < 100 && h.server.admission.stats().queued === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(h.server.admission.stats().queued).toBe(1);
    req.destroy();
    for (let i = 0; i < 100 && h.server.admission.stats().queued > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(h.server.admission.stats()).toMatchObject({ queued: 0, abandoned: 1 });
    expect((await first).status).toBe(200);
    expect((await history(a)).some((e: { params: { marker?: string } }) => e.params.marker === 'abandoned')).toBe(false);
  });

  it('answers the waiting tasks of a CN that is removed', async () => {
    h = await Harness.create({ admissionLimits: { maxInFlight: 1, maxPerCn: 1, maxQueued: 10 } });
    const a: TestCn = await h.addCn();
    const running = postTask(a, 'nop', { sleep: 5 });
    await new Promise((r) => setTimeout(r, 50));
    const waiting = postTask(a, 'nop', {});
    for (let i = 0; i < 100 && h.server.admission.stats().queued === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await h.server.detach(a.uuid);
    expect(await waiting).toMatchObject({ status: 500, body: { error: 'task aborted: the mock CN was removed' } });
    expect((await running).status).toBe(500);
  });
});
