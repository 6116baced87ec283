/**
 * The daemon's metrics as a real Prometheus takes them: Debian's `prometheus` (/usr/bin/prometheus,
 * installed by .ci/run as chromium is) scrapes the daemon's --metrics-address with the plain job
 * docs/metrics.md gives, on loopback ports chosen by the OS. The scrape succeeds (`up` is 1), a
 * PromQL query over Prometheus's HTTP API gives the heartbeat rate, and the join of `up` with
 * mockcloud_daemon_info gives one series naming this daemon. And Debian's `promtool check
 * metrics` finds only the one name docs/metrics.md keeps for Triton's sake.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuietLogger } from '../../src/common/log.js';
import { resolveConfig } from '../../src/daemon/config.js';
import { Daemon } from '../../src/daemon/daemon.js';
import { noMdata } from '../../src/daemon/mdata.js';
import { until as waitFor } from '../cli/helpers/built-daemon.js';
import { pinnablePorts } from '../common/helpers/ports.js';

const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';
const HEARTBEAT_MS = 500;

interface QueryResult {
  metric: Record<string, string>;
  value: [number, string];
}

describe('Debian prometheus scraping the daemon', () => {
  let daemon: Daemon;
  let dataDir: string;
  let promDir: string;
  let prom: ChildProcess | undefined;
  let promUrl: string;
  let promLog = '';

  async function query(q: string): Promise<QueryResult[]> {
    const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as { status: string; data?: { resultType: string; result: QueryResult[] }; error?: string };
    expect(body.status, `${q}: ${body.error ?? ''}`).toBe('success');
    return body.data!.result;
  }

  beforeAll(async () => {
    if (!existsSync(PROMETHEUS) || !existsSync(PROMTOOL)) {
      throw new Error(`${PROMETHEUS} and ${PROMTOOL} are needed (apt-get install -y prometheus; .ci/run installs it)`);
    }
    dataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-prom-daemon-'));
    promDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-prom-'));
    await fsp.writeFile(
      path.join(dataDir, 'config.json'),
      JSON.stringify({ timings: { heartbeatIntervalMs: HEARTBEAT_MS, startSpreadMs: 100, statusThrottleMs: 1000 } }),
    );
    const config = await resolveConfig({
      flags: { dataDir, cmonPort: 0, metricsAddress: '127.0.0.1:0', uiAddress: 'none' },
      env: {},
      mdata: noMdata,
    });
    daemon = new Daemon({ config, log: createQuietLogger('prometheus-test'), plugins: [], embeddedHeadnode: {} });
    await daemon.start();
    await daemon.growTo(2);
    const target = `127.0.0.1:${daemon.metricsAddress!.port}`;
    // The job of docs/metrics.md, scraped every second so that a test sees a rate soon.
    await fsp.writeFile(
      path.join(promDir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  evaluation_interval: 1s',
        'scrape_configs:',
        '  - job_name: mockcloud',
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    );
    // The port is the OS's choice; should another process take it in between, try another.
    for (let attempt = 0; attempt < 5 && !prom; attempt++) {
      const port = (await pinnablePorts(1))[0]!;
      const child = spawn(
        PROMETHEUS,
        [
          `--config.file=${path.join(promDir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${path.join(promDir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
          '--log.level=warn',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      child.stderr!.on('data', (d: Buffer) => (promLog = (promLog + d.toString()).slice(-20_000)));
      promUrl = `http://127.0.0.1:${port}`;
      const ready = await waitFor(
        async () => (child.exitCode !== null ? 'exited' : (await fetch(`${promUrl}/-/ready`).then((r) => r.ok, () => false)) ? 'ready' : undefined),
        60_000,
        'prometheus to be ready',
        200,
      ).catch(() => 'exited');
      if (ready === 'ready') prom = child;
      else child.kill('SIGKILL');
    }
    if (!prom) throw new Error(`prometheus did not start: ${promLog}`);
  }, 120_000);

  afterAll(async () => {
    if (prom && prom.exitCode === null) {
      const exited = new Promise((r) => prom!.once('exit', r));
      prom.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (prom.exitCode === null) prom.kill('SIGKILL');
    }
    await daemon?.stop();
    for (const d of [dataDir, promDir]) if (d) await fsp.rm(d, { recursive: true, force: true });
  });

  it('scrapes the daemon: up is 1, with the same instance as every series', async () => {
    const up = await waitFor(async () => {
      const r = await query('up{job="mockcloud"}');
      return r.length === 1 && r[0]!.value[1] === '1' ? r : undefined;
    }, 30_000, 'a successful scrape', 250);
    const instance = up[0]!.metric.instance;
    expect(instance).toBe(`127.0.0.1:${daemon.metricsAddress!.port}`);
    // Every series of the job carries the target's instance: none sends its own.
    const others = await query('count by (instance) ({job="mockcloud"})');
    expect(others.map((r) => r.metric.instance)).toEqual([instance]);
    expect(await query('count({job="mockcloud", exported_instance!=""})')).toEqual([]);
  });

  it('answers PromQL for the heartbeat rate over its HTTP API', async () => {
    // Two CNs and the dev DC's headnode server, each every HEARTBEAT_MS.
    const expected = (3 * 1000) / HEARTBEAT_MS;
    const rate = await waitFor(async () => {
      const r = await query('sum(rate(mockcloud_reports_sent_total{job="mockcloud",api="cnapi",kind="heartbeat"}[5s]))');
      const v = r.length === 1 ? Number(r[0]!.value[1]) : 0;
      return v > 0 ? v : undefined;
    }, 40_000, 'a heartbeat rate', 500);
    // A busy machine only makes heartbeats late, never more.
    expect(rate).toBeGreaterThan(0);
    expect(rate).toBeLessThan(expected * 1.5);
  });

  it('joins up with mockcloud_daemon_info into one series naming the daemon', async () => {
    const joined = await waitFor(async () => {
      const r = await query('up{job="mockcloud"} * on (instance) group_left (daemon_id, version, git_sha) mockcloud_daemon_info');
      return r.length > 0 ? r : undefined;
    }, 30_000, 'the join', 250);
    expect(joined).toHaveLength(1);
    expect(joined[0]!.metric).toEqual({ job: 'mockcloud', instance: `127.0.0.1:${daemon.metricsAddress!.port}`, daemon_id: daemon.daemonId!, version: expect.any(String), git_sha: expect.any(String) });
    expect(joined[0]!.metric.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(joined[0]!.value[1]).toBe('1');
  });

  it('passes promtool check metrics but for the one Triton name docs/metrics.md keeps', async () => {
    const text = await (await fetch(daemon.metricsAddress!.url)).text();
    const child = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => {
      child.on('close', resolve);
      child.stdin!.end(text);
    });
    const findings = out.trim().split('\n').filter((l) => l.trim() !== '');
    expect(findings).toEqual(['mockcloud_outbound_requests_completed counter metrics should have "_total" suffix']);
    expect(code).toBe(3); // promtool's "lint problems" exit
  });
});
