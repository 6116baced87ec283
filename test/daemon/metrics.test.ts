/**
 * The daemon's Prometheus metrics (docs/metrics.md), black-box over HTTP: a daemon with the
 * embedded dev headnode and two mock CNs, scraped on its control API and on its own
 * --metrics-address listener. The text must parse strictly (every sample under a # TYPE,
 * histograms' buckets cumulative up to +Inf = _count), and the figures must move with what
 * the fleet does: heartbeats, a task, outbound requests, a CN taken offline by an event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { waitFor } from './helpers/fakes.js';

const log = createQuietLogger('metrics-test');

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/;

/**
 * The Prometheus text format 0.0.4, strictly: # HELP and # TYPE once per family, before its
 * samples; each sample a name its family owns (histograms: _bucket, _sum, _count), labels
 * quoted and escaped, a float value. Throws naming the line otherwise.
 */
function parseMetrics(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const lines = text.split('\n');
  expect(lines.at(-1), 'the text ends with a newline').toBe('');
  lines.forEach((line, i) => {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === '') return;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`bad metric name, ${where}`);
      const f = families.get(name) ?? { type: '', help: '', samples: [] };
      if (kind === 'TYPE') {
        if (f.type || f.samples.length > 0) throw new Error(`TYPE twice or after samples, ${where}`);
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`bad type, ${where}`);
        f.type = rest;
      } else {
        if (f.help) throw new Error(`HELP twice, ${where}`);
        f.help = rest;
      }
      families.set(name, f);
      return;
    }
    if (line.startsWith('#')) throw new Error(`unexpected comment, ${where}`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample, ${where}`);
    const [, name, labelText, valueText] = m as unknown as [string, string, string | undefined, string];
    const labels: Record<string, string> = {};
    for (let rest = labelText ?? ''; rest.length > 0; ) {
      const l = LABEL.exec(rest);
      if (!l) throw new Error(`bad labels, ${where}`);
      if (l[1]! in labels) throw new Error(`label twice, ${where}`);
      labels[l[1]!] = l[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
      rest = rest.slice(l[0].length);
    }
    const value = /^[+-]?Inf$/.test(valueText) ? Number(valueText.replace('Inf', 'Infinity')) : valueText === 'NaN' ? NaN : Number(valueText);
    if (Number.isNaN(value) && valueText !== 'NaN') throw new Error(`bad value, ${where}`);
    const base = [...families.keys()].find((f) => f === name || (families.get(f)!.type === 'histogram' && /^(.*)_(bucket|sum|count)$/.exec(name)?.[1] === f));
    if (!base || !families.get(base)!.type) throw new Error(`sample without a # TYPE, ${where}`);
    families.get(base)!.samples.push({ name, labels, value });
  });
  for (const [name, f] of families) {
    if (!f.type || !f.help) throw new Error(`${name}: HELP and TYPE both needed`);
    if (f.type !== 'histogram') continue;
    // Per label set: buckets non-decreasing, ending in +Inf equal to _count.
    const byLabels = new Map<string, Sample[]>();
    for (const s of f.samples) {
      const { le, ...rest } = s.labels;
      void le;
      const key = JSON.stringify(Object.entries(rest).sort());
      byLabels.set(key, [...(byLabels.get(key) ?? []), s]);
    }
    for (const samples of byLabels.values()) {
      const buckets = samples.filter((s) => s.name === `${name}_bucket`);
      const count = samples.find((s) => s.name === `${name}_count`);
      expect(samples.find((s) => s.name === `${name}_sum`), `${name}_sum`).toBeDefined();
      expect(buckets.at(-1)?.labels.le, `${name}: last bucket`).toBe('+Inf');
      for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
      expect(buckets.at(-1)!.value).toBe(count!.value);
    }
  }
  return families;
}

/** The sum of a family's samples (of `name`, default the family's own) whose labels include `match`. */
function total(families: Map<string, Family>, family: string, match: Record<string, string> = {}, name = family): number {
  const f = families.get(family);
  if (!f) return 0;
  let sum = 0;
  for (const s of f.samples) {
    if (s.name !== name) continue;
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

describe('GET /metrics', () => {
  let daemon: Daemon;
  let dataDir: string;
  let cns: string[];

  async function scrape(url = `${daemon.controlAddress.url}/metrics`): Promise<Map<string, Family>> {
    const res = await fetch(url);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parseMetrics(text);
  }

  beforeAll(async () => {
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-metrics-'));
    await fsp.writeFile(
      path.join(dataDir, 'config.json'),
      JSON.stringify({ timings: { heartbeatIntervalMs: 100, startSpreadMs: 50, statusThrottleMs: 200, requestTimeoutMs: 1000 } }),
    );
    const config = await resolveConfig({
      flags: {
        dataDir,
        cmonPort: 0,
        metricsAddress: '127.0.0.1:0',
        datacenterName: 'metrics-dc',
        maxTasks: '100',
        maxTasksPerServer: '10',
        maxQueuedTasks: '1000',
        maxConnections: '2000',
      },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log, plugins: [], embeddedHeadnode: {} });
    await daemon.start();
    cns = (await daemon.growTo(2)).created.map((c) => c.uuid);
    expect(cns).toHaveLength(2);
    await waitFor(() => cns.every((u) => daemon.fleet.get(u)?.registered), 10_000, 'both CNs registered');
  }, 30_000);

  afterAll(async () => {
    await daemon?.stop();
    if (dataDir) await fsp.rm(dataDir, { recursive: true, force: true });
  });

  it('parses, carries Triton-style labels, and counts the fleet, heartbeats and outbound requests', async () => {
    const first = await scrape();
    const fleet = first.get('mockcloud_servers')!;
    expect(fleet.type).toBe('gauge');
    // Two CNs and the dev DC's headnode server, all running.
    expect(total(first, 'mockcloud_servers', { state: 'running' })).toBe(3);
    expect(total(first, 'mockcloud_servers', { state: 'offline' })).toBe(0);
    // Triton's datacenter and service labels; `instance` is Prometheus's (the target), the daemon
    // id is on the info metric, to join with (docs/metrics.md).
    expect(fleet.samples[0]!.labels).toEqual({ datacenter: 'metrics-dc', service: 'mockcloud', state: expect.any(String), profile: expect.any(String) });
    expect(first.get('mockcloud_daemon_info')!.samples).toEqual([
      {
        name: 'mockcloud_daemon_info',
        labels: { datacenter: 'metrics-dc', service: 'mockcloud', daemon_id: daemon.daemonId, version: expect.stringMatching(/^\d+\.\d+\.\d+$/), git_sha: expect.any(String) },
        value: 1,
      },
    ]);
    // The lateness buckets resolve a heartbeat that waited a scheduler slice (well under 1 ms)
    // up to a slow-heartbeat's seconds, no step wider than 2.5x.
    const bounds = first
      .get('mockcloud_heartbeat_lateness_seconds')!
      .samples.filter((x) => x.name.endsWith('_bucket') && x.labels.le !== '+Inf')
      .map((x) => Number(x.labels.le));
    expect(bounds[0]).toBeLessThanOrEqual(0.0001);
    expect(bounds[bounds.length - 1]).toBeGreaterThanOrEqual(30);
    for (let i = 1; i < bounds.length; i++) expect(bounds[i]! / bounds[i - 1]!).toBeLessThanOrEqual(2.5);
    expect(first.get('mockcloud_reports_sent_total')!.type).toBe('counter');
    expect(first.get('mockcloud_heartbeat_lateness_seconds')!.type).toBe('histogram');
    for (const name of ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'mockcloud_event_loop_delay_p99_seconds']) {
      expect(total(first, name), name).toBeGreaterThanOrEqual(0);
      expect(first.has(name), name).toBe(true);
    }
    expect(total(first, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    const beats = (f: Map<string, Family>): number => total(f, 'mockcloud_reports_sent_total', { api: 'cnapi', kind: 'heartbeat' });
    const lateness = (f: Map<string, Family>): number =>
      total(f, 'mockcloud_heartbeat_lateness_seconds', {}, 'mockcloud_heartbeat_lateness_seconds_count');
    const cnapiPosts = (f: Map<string, Family>): number =>
      total(f, 'mockcloud_outbound_requests_completed', { api: 'cnapi', method: 'POST' });
    let later = first;
    await waitFor(
      async () => {
        later = await scrape();
        return beats(later) >= beats(first) + 4 && lateness(later) > lateness(first) && cnapiPosts(later) > cnapiPosts(first);
      },
      10_000,
      'heartbeats, their lateness and outbound requests counted',
    );
    expect(total(later, 'mockcloud_outbound_requests_completed', { api: 'cnapi', status_code: '204' })).toBeGreaterThan(0);
    expect(
      total(later, 'mockcloud_outbound_request_duration_seconds', { api: 'cnapi', method: 'POST' }, 'mockcloud_outbound_request_duration_seconds_count'),
    ).toBe(cnapiPosts(later));
    expect(total(later, 'mockcloud_servers_registered')).toBe(3);
  });

  it('counts a task by name and outcome, with its duration', async () => {
    const cn = daemon.fleet.get(cns[0]!)!;
    const res = await fetch(`http://${cn.agentAddress!.ip}:${cn.agentAddress!.port}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body: JSON.stringify({ task: 'nop', params: {} }),
    });
    expect(res.status, await res.text()).toBe(200);
    const m = await scrape();
    expect(total(m, 'mockcloud_tasks_completed_total', { task: 'nop', outcome: 'succeeded' })).toBe(1);
    expect(total(m, 'mockcloud_task_duration_seconds', { task: 'nop' }, 'mockcloud_task_duration_seconds_count')).toBe(1);
    expect(total(m, 'mockcloud_tasks_in_flight')).toBe(0);
    expect(m.has('mockcloud_tasks_refused_total')).toBe(true);
    // The bounds an operator set (issue 15: shown in /status and the metrics).
    expect(total(m, 'mockcloud_task_limit', { bound: 'in_flight' })).toBe(100);
    expect(total(m, 'mockcloud_task_limit', { bound: 'per_server' })).toBe(10);
    expect(total(m, 'mockcloud_task_limit', { bound: 'queued' })).toBe(1000);
    expect(total(m, 'mockcloud_agent_connections_limit')).toBe(2000);
    expect(total(m, 'mockcloud_agent_connections')).toBeGreaterThanOrEqual(0);
    expect(m.has('mockcloud_agent_connections_closed_total')).toBe(true);

    // A task cn-agent does not know is refused before it runs.
    const unknown = await fetch(`http://${cn.agentAddress!.ip}:${cn.agentAddress!.port}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-server-uuid': cn.uuid },
      body: JSON.stringify({ task: 'no_such_task', params: {} }),
    });
    expect(unknown.status).toBe(404);
    expect(total(await scrape(), 'mockcloud_tasks_refused_total', { reason: 'unknown_task' })).toBe(1);
  });

  async function startEvent(body: Record<string, unknown>): Promise<string> {
    const res = await fetch(`${daemon.controlAddress.url}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const ev = (await res.json()) as { id: string };
    expect(res.status, JSON.stringify(ev)).toBe(201);
    return ev.id;
  }

  it('shows a CN taken offline, cut off or rebooting by an event, and the events by type and source', async () => {
    const id = await startEvent({ type: 'offline', target: { servers: [cns[1]] }, source: { scenario: 'metrics-test', step: 1 } });
    const during = await scrape();
    expect(total(during, 'mockcloud_servers', { state: 'offline' })).toBe(1);
    expect(total(during, 'mockcloud_servers', { state: 'running' })).toBe(2);
    expect(total(during, 'mockcloud_events_started_total', { type: 'offline', source: 'scenario' })).toBe(1);
    expect(total(during, 'mockcloud_events_active', { type: 'offline' })).toBe(1);
    expect(total(during, 'mockcloud_scenario_steps_applied_total', { action: 'event' })).toBe(1);

    const end = await fetch(`${daemon.controlAddress.url}/events/${id}`, { method: 'DELETE' });
    expect(end.status).toBe(200);
    // Its power back, the CN boots (DHCP to the dev booter) and registers again.
    await waitFor(() => daemon.fleet.get(cns[1]!)?.registered === true, 10_000, 'the CN back up');
    const after = await scrape();
    expect(total(after, 'mockcloud_servers', { state: 'offline' })).toBe(0);
    expect(total(after, 'mockcloud_servers', { state: 'running' })).toBe(3);
    expect(total(after, 'mockcloud_events_ended_total', { type: 'offline', reason: 'deleted' })).toBe(1);
    expect(total(after, 'mockcloud_events_active')).toBe(0);

    // Cut off the network, the CN runs on: partitioned; its heartbeats fail as timeouts.
    const failedBeats = (f: Map<string, Family>): number => total(f, 'mockcloud_reports_failed_total', { api: 'cnapi', kind: 'heartbeat' });
    const timeouts = (f: Map<string, Family>): number => total(f, 'mockcloud_outbound_requests_completed', { api: 'cnapi', status_code: 'timeout' });
    const before = await scrape();
    const cut = await startEvent({ type: 'partition', target: { servers: [cns[0]] } });
    expect(total(await scrape(), 'mockcloud_servers', { state: 'partitioned' })).toBe(1);
    let cutOff = before;
    await waitFor(
      async () => {
        cutOff = await scrape();
        return failedBeats(cutOff) > failedBeats(before) && timeouts(cutOff) > timeouts(before);
      },
      8000,
      'a partitioned CN\'s heartbeat failing as a timeout',
    );
    expect(total(cutOff, 'mockcloud_servers_failing', { kind: 'heartbeat' })).toBeGreaterThanOrEqual(1);
    expect(total(cutOff, 'mockcloud_errors_total', { kind: 'cnapi.heartbeat' })).toBeGreaterThanOrEqual(1);
    expect((await fetch(`${daemon.controlAddress.url}/events/${cut}`, { method: 'DELETE' })).status).toBe(200);

    // Late heartbeats (slow-heartbeat: 300 ms after their interval) land in the upper buckets.
    const lateBucket = (f: Map<string, Family>): number =>
      total(f, 'mockcloud_heartbeat_lateness_seconds', {}, 'mockcloud_heartbeat_lateness_seconds_count') -
      total(f, 'mockcloud_heartbeat_lateness_seconds', { le: '0.25' }, 'mockcloud_heartbeat_lateness_seconds_bucket');
    const slow = await startEvent({ type: 'slow-heartbeat', target: { servers: [cns[0]] }, params: { lateMs: 300 } });
    const onTime = lateBucket(await scrape());
    await waitFor(async () => lateBucket(await scrape()) >= onTime + 2, 8000, 'late heartbeats counted as late');
    expect((await fetch(`${daemon.controlAddress.url}/events/${slow}`, { method: 'DELETE' })).status).toBe(200);

    // A reboot: down for its boot time.
    await startEvent({ type: 'reboot', target: { servers: [cns[1]] }, params: { bootMs: 60_000 } });
    let rebooting = await scrape();
    await waitFor(async () => total((rebooting = await scrape()), 'mockcloud_servers', { state: 'rebooting' }) === 1, 5000, 'a CN rebooting');
    expect(total(rebooting, 'mockcloud_servers', { state: 'partitioned' })).toBe(0);
    expect(total(rebooting, 'mockcloud_events_started_total', { source: 'api' })).toBe(3);
  });

  it('answers a bad Host, an unknown path and another method as the control API does', async () => {
    const url = `${daemon.controlAddress.url}/metrics`;
    const post = await fetch(url, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ code: 'MethodNotAllowed', message: 'POST is not allowed on /metrics' });
    const { port } = daemon.controlAddress;
    const forbidden = await rawGet(port, '/metrics', 'evil.example.com');
    expect(forbidden.status).toBe(403);
    expect(JSON.parse(forbidden.body)).toMatchObject({ code: 'Forbidden' });
  });

  it('serves the same metrics on --metrics-address, and nothing else there', async () => {
    const where = daemon.metricsAddress!;
    expect(where.ip).toBe('127.0.0.1');
    expect(where.port).not.toBe(daemon.controlAddress.port);
    const own = await scrape(where.url);
    const control = await scrape();
    expect([...own.keys()].sort()).toEqual([...control.keys()].sort());
    expect(total(own, 'mockcloud_servers')).toBe(3);

    const missing = await fetch(`http://127.0.0.1:${where.port}/status`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ code: 'ResourceNotFound', message: 'GET /status does not exist' });
    const post = await fetch(where.url, { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(await post.json()).toEqual({ code: 'MethodNotAllowed', message: 'POST is not allowed on /metrics' });
    // A scraper names its target by IP or by a DNS name of its service discovery: both answered.
    expect((await rawGet(where.port, '/metrics', `127.0.0.1:${where.port}`)).status).toBe(200);
    const byName = await rawGet(where.port, '/metrics', `mockcloud0.cns.example.com:${where.port}`);
    expect(byName.status).toBe(200);
    expect(byName.body).toContain('mockcloud_servers');
  });
});

describe('--metrics-address', () => {
  it('on an address that is taken or not this host\'s: the daemon does not start, and says which flag to change', async () => {
    const dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-metrics-addr-'));
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      for (const address of [`127.0.0.1:${port}`, '192.0.2.1:0']) {
        const config = await resolveConfig({ flags: { dataDir, cmonPort: 0, metricsAddress: address }, env: {}, mdata: noMdata });
        const d = new Daemon({ config, log, plugins: [] });
        await expect(d.start()).rejects.toThrow(/metrics cannot be served on .*--metrics-address \(env MOCKCLOUD_METRICS_ADDRESS\)/);
      }
      // The fleet page's address is checked the same way, before anything is written.
      const config = await resolveConfig({ flags: { dataDir, cmonPort: 0, uiAddress: `127.0.0.1:${port}` }, env: {}, mdata: noMdata });
      const d = new Daemon({ config, log, plugins: [] });
      await expect(d.start()).rejects.toThrow(/the fleet page cannot be served on .*--ui-address .*or none for no page/);
      // Nothing was written.
      expect(await fsp.readdir(dataDir)).toEqual([]);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
      await fsp.rm(dataDir, { recursive: true, force: true });
    }
  });
});

/** A GET with a Host header of our choosing (fetch sets its own). */
async function rawGet(port: number, pathname: string, host: string): Promise<{ status: number; body: string }> {
  const http = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: pathname, headers: { host }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}
