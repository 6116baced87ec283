/**
 * The heartbeat thread: a main thread that does not give its event loop back (a burst of task
 * starts, a long collection) does not hold the fleet's heartbeats, which go every interval after
 * the last answer as sdc-cn-agent's lib/heartbeater.js sends them. CNAPI here is another
 * process, as it is for a mockcloud zone, so that only the daemon's side is blocked.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { CnapiReporter } from '../../src/agents/cn-agent/cnapi-reporter/reporter.js';
import { JsonHttpClient } from '../../src/common/http-client.js';
import { createQuietLogger } from '../../src/common/log.js';
import { Scheduler } from '../../src/runtime/scheduler.js';
import type { MockCnImpl } from '../../src/mockcn/mock-cn.js';
import { waitFor } from './helpers/fakes.js';
import { makeReportingCn } from './helpers/reporting-cn.js';

/** A CNAPI that accepts every POST and tells, on GET /beats, when each heartbeat arrived. */
const CNAPI_PROCESS = `
const http = require('node:http');
const beats = [];
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.method === 'GET' && req.url === '/beats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(beats));
      return;
    }
    if (/\\/events\\/heartbeat$/.test(req.url)) beats.push({ path: req.url, at: Date.now() });
    res.writeHead(204);
    res.end();
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

const makeCn = (): MockCnImpl => makeReportingCn().cn;

/** Keeps this thread's event loop for `ms` (bounded by the clock). */
function blockMainThread(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // the main thread's turn never ends
  }
}

describe('the heartbeat thread', () => {
  let child: ChildProcess | undefined;
  let reporter: CnapiReporter | undefined;
  const scheduler = new Scheduler();
  const http = new JsonHttpClient();

  afterEach(async () => {
    await reporter?.stop();
    scheduler.stop();
    http.close();
    child?.kill('SIGKILL');
  });

  async function startCnapi(): Promise<string> {
    child = spawn(process.execPath, ['-e', CNAPI_PROCESS], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(child.stdout!, 'data')) as [Buffer];
    return `http://127.0.0.1:${line.toString().trim()}`;
  }

  /** Heartbeats every 100 ms, to the CNAPI process. */
  function startReporter(cnapiUrl: string, thread: boolean): CnapiReporter {
    scheduler.start();
    reporter = new CnapiReporter({
      log: createQuietLogger(),
      scheduler,
      http,
      cnapiUrl,
      timings: { heartbeatIntervalMs: 100, startSpreadMs: 20, requestTimeoutMs: 5000 },
      heartbeatThread: thread,
    });
    reporter.start();
    return reporter;
  }

  async function beatsOf(url: string, uuids: string[]): Promise<number[]> {
    const res = await fetch(`${url}/beats`);
    const all = (await res.json()) as { path: string; at: number }[];
    return all.filter((b) => uuids.some((u) => b.path === `/servers/${u}/events/heartbeat`)).map((b) => b.at);
  }

  it.each([
    { thread: true, during: 'keeps sending them every interval' },
    { thread: false, during: 'sends none (the main thread sends them)' },
  ])('while the main thread is blocked for 1.5 s, a reporter with thread=$thread $during', async ({ thread }) => {
    const cnapiUrl = await startCnapi();
    const r = startReporter(cnapiUrl, thread);
    const cns = [makeCn(), makeCn()];
    for (const cn of cns) r.attach(cn);
    await waitFor(() => cns.every((cn) => r.lastHeartbeatAt(cn.uuid)), 10_000, 'first heartbeats');

    const from = Date.now();
    blockMainThread(1500);
    const to = Date.now();
    const during = (await beatsOf(cnapiUrl, cns.map((c) => c.uuid))).filter((at) => at > from + 200 && at < to);
    if (thread) {
      // 100 ms apart for each of the two CNs: some 26 in 1.3 s; a loaded machine gets fewer.
      expect(during.length).toBeGreaterThanOrEqual(6);
      // And the main thread hears of them once it turns again.
      const counted = r.counters.heartbeat.ok;
      await waitFor(() => r.counters.heartbeat.ok > counted, 10_000, 'answers counted');
    } else {
      expect(during).toEqual([]);
    }
  });

  it('goes on heartbeating from the main thread when the heartbeat thread dies', async () => {
    const cnapiUrl = await startCnapi();
    const r = startReporter(cnapiUrl, true);
    const cn = makeCn();
    r.attach(cn);
    await waitFor(() => r.lastHeartbeatAt(cn.uuid), 10_000, 'first heartbeat');
    // What an uncaught error in the thread comes to: its worker ends.
    const worker = (r as unknown as { thread: { worker: { terminate(): Promise<number> } } }).thread.worker;
    await worker.terminate();
    const diedAt = Date.now();
    await waitFor(async () => (await beatsOf(cnapiUrl, [cn.uuid])).some((at) => at > diedAt + 300), 10_000, 'heartbeats after the thread died');
    expect(r.lastHeartbeatAt(cn.uuid)).toBeGreaterThan(diedAt);
  });

  it('tells how its own event loop ran since it was last asked: late turns, and on Linux its CPU time and waits for a CPU', async () => {
    const cnapiUrl = await startCnapi();
    const r = startReporter(cnapiUrl, true);
    r.attach(makeCn());
    let figures: ReturnType<CnapiReporter['heartbeatThreadFigures']>;
    await waitFor(() => (figures = r.heartbeatThreadFigures()) !== undefined, 10_000, "the thread's first second");
    expect(figures!.seconds).toBeGreaterThanOrEqual(1);
    expect(figures!.delayMaxMs).toBeGreaterThanOrEqual(0);
    // Read again at once: nothing new yet (a second has not passed), so nothing is told twice.
    expect(r.heartbeatThreadFigures()).toBeUndefined();
    if (process.platform === 'linux') {
      expect(figures!.cpuMs).toBeGreaterThan(0);
      expect(figures!.runqueueWaitMs).toBeGreaterThanOrEqual(0);
    }
  });
});
