/**
 * cmon-agent scraped the way CMON scrapes it: the address from triton-netconfig's
 * agentIpFromSysinfo, a restify-clients raw client, the real `x-joyent-cmon-opts` header; the
 * answer parsed as strict Prometheus text.
 */
import http from 'node:http';
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CmonAgentPlugin, type CmonAgentOptions } from '../../src/agents/cmon-agent/index.js';
import { newUuid } from '../../src/common/uuid.js';
import type { MockCnImpl } from '../../src/mockcn/mock-cn.js';
import { makeContext, TestFleet, vmPayload, type TestContext } from './helpers/fleet.js';
import { parsePrometheus, single, type ParsedFamily } from './helpers/prometheus-parser.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as { agentIpFromSysinfo(s: unknown): string };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const restifyClients = require('restify-clients') as any;

const CORE_HEADER = (isCoreZone: unknown): string => Buffer.from(JSON.stringify({ isCoreZone })).toString('base64');

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** GET like triton-cmon's lib/endpoints/metrics.js: restify-clients createClient, raw body. */
function cmonScrape(ip: string, port: number, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const client = restifyClients.createClient({ url: `http://${ip}:${port}`, headers, retry: false, agent: false });
  return new Promise((resolve, reject) => {
    client.get(path, (err: Error | null, req: http.ClientRequest & { on: Function }) => {
      if (err) return reject(err);
      req.on('result', (_e: Error | null, res: http.IncomingMessage) => {
        if (!res) return reject(_e);
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          client.close();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
    });
  });
}

/** A plain request (gzip, POST, arbitrary headers). */
function raw(ip: string, port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: ip, port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

function counters(f: Map<string, ParsedFamily>): Map<string, number> {
  const out = new Map<string, number>();
  for (const fam of f.values()) {
    if (fam.type !== 'counter') continue;
    for (const s of fam.samples) out.set(`${fam.name}${JSON.stringify(s.labels)}`, s.value);
  }
  return out;
}

describe('cmon-agent', () => {
  let fleet: TestFleet;
  let tc: TestContext;
  let agent: CmonAgentPlugin | undefined;

  beforeEach(async () => {
    fleet = await TestFleet.create();
    tc = makeContext(fleet, {});
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    tc.close();
    await fleet.close();
  });

  async function startAgent(opts: Partial<CmonAgentOptions>): Promise<{ port: number }> {
    agent = new CmonAgentPlugin(tc.ctx, { port: 0, ...opts });
    await agent.start();
    for (const cn of fleet.list()) agent.attach(cn);
    await agent.settled();
    return { port: agent.addresses()[0]!.port };
  }

  async function webVm(cn: MockCnImpl, overrides: Record<string, unknown> = {}) {
    return cn.vms.create(
      vmPayload({
        max_physical_memory: 2048,
        quota: 20,
        nics: [
          { mac: '90:b8:d0:00:00:01', ip: '10.88.88.9', netmask: '255.255.255.0', nic_tag: 'external', network_uuid: newUuid(), interface: 'net0', primary: true },
          { mac: '90:b8:d0:00:00:02', ip: '10.99.99.9', netmask: '255.255.0.0', nic_tag: 'admin', network_uuid: newUuid(), interface: 'net1' },
        ],
        ...overrides,
      }),
    );
  }

  it('serves a running VM’s metrics as Prometheus text with the real families, sized from the VM', async () => {
    const cn = await fleet.addCn({ agentIp: '127.0.0.2' });
    const vm = await webVm(cn);
    const small = await cn.vms.create(vmPayload({ max_physical_memory: 256, cpu_cap: 0 }));
    const { port } = await startAgent({ bind: 'agent-ips' });
    const ip = netconfig.agentIpFromSysinfo(cn.sysinfo);
    expect(ip).toBe('127.0.0.2');

    const res = await cmonScrape(ip, port, `/v1/${vm.uuid}/metrics`, { 'x-joyent-cmon-opts': CORE_HEADER(false) });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const f = parsePrometheus(res.text);
    for (const name of [
      'time_of_day', 'cpu_user_usage', 'cpu_sys_usage', 'cpu_wait_time', 'load_average',
      'mem_agg_usage', 'mem_limit', 'mem_swap', 'mem_swap_limit',
      'net_agg_bytes_in', 'net_agg_bytes_out', 'net_agg_packets_in', 'net_agg_packets_out',
      'zfs_used', 'zfs_available', 'zfs_quota', 'cpucap_limit_percentage',
      'vfs_bytes_read_count', 'tcp_active_open_count', 'zone_misc_metrics_available_boolean',
    ]) expect(f.has(name), name).toBe(true);
    expect(f.get('cpu_user_usage')!.type).toBe('counter');
    expect(f.get('mem_agg_usage')!.type).toBe('gauge');
    expect(f.get('mem_limit')!.help).toBe('Memory limit in bytes');
    expect(single(f, 'mem_limit')).toBe(2048 * 1024 * 1024);
    expect(single(f, 'mem_agg_usage')).toBeLessThanOrEqual(2048 * 1024 * 1024);
    expect(single(f, 'zfs_quota')).toBe(20 * 1024 ** 3);
    expect(single(f, 'zfs_used') + single(f, 'zfs_available')).toBe(20 * 1024 ** 3);
    expect(single(f, 'cpucap_limit_percentage')).toBe(100);
    expect(single(f, 'time_metrics_available_boolean')).toBe(1);
    expect(f.has('triton_core_metrics_available_boolean')).toBe(false);
    const nics = f.get('net_agg_bytes_in')!.samples.map((s) => s.labels);
    expect(nics).toEqual([
      expect.objectContaining({ interface: 'vnic0', nic_tag: 'external' }),
      expect.objectContaining({ interface: 'vnic1', nic_tag: 'admin' }),
    ]);
    expect(Math.abs(single(f, 'time_of_day') - Date.now())).toBeLessThan(60_000);

    const f2 = parsePrometheus((await cmonScrape(ip, port, `/v1/${small.uuid}/metrics`, { 'x-joyent-cmon-opts': CORE_HEADER(true) })).text);
    expect(single(f2, 'mem_limit')).toBe(256 * 1024 * 1024);
    expect(single(f2, 'cpucap_metrics_available_boolean')).toBe(0);
    expect(f2.has('cpucap_limit_percentage')).toBe(false);
    expect(single(f2, 'triton_core_metrics_available_boolean')).toBe(0);
  });

  it('counters only grow across scrapes', async () => {
    const cn = await fleet.addCn({ agentIp: '127.0.0.2' });
    const vm = await webVm(cn);
    const { port } = await startAgent({ bind: 'agent-ips' });
    const path = `/v1/${vm.uuid}/metrics`;
    const scrapes: Map<string, number>[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await cmonScrape('127.0.0.2', port, path, { 'x-joyent-cmon-opts': CORE_HEADER(false) });
      scrapes.push(counters(parsePrometheus(res.text)));
      await new Promise((r) => setTimeout(r, 120));
    }
    expect(scrapes[0]!.size).toBeGreaterThan(20);
    for (let i = 1; i < scrapes.length; i++) {
      for (const [key, v] of scrapes[i]!) expect(v, key).toBeGreaterThanOrEqual(scrapes[i - 1]!.get(key)!);
    }
    const first = scrapes[0]!;
    const last = scrapes[scrapes.length - 1]!;
    expect(last.get('cpu_user_usage{}')!).toBeGreaterThan(first.get('cpu_user_usage{}')!);
    expect(last.get('net_agg_bytes_in{"interface":"vnic0","nic_tag":"external","network_uuid":' + JSON.stringify(vm.nics![0]!.network_uuid) + '}')!).toBeGreaterThan(
      first.get('net_agg_bytes_in{"interface":"vnic0","nic_tag":"external","network_uuid":' + JSON.stringify(vm.nics![0]!.network_uuid) + '}')!,
    );
  });

  it('answers unknown and stopped VMs and a bad cmon-opts header in plain text as the real agent does, 200 for POST /v1/refresh', async () => {
    const cn = await fleet.addCn({ agentIp: '127.0.0.2' });
    const running = await webVm(cn);
    const stopped = await webVm(cn, { autoboot: false, nics: [] });
    const { port } = await startAgent({ bind: 'agent-ips' });

    // CMON (>= 1.6.0) always sends its header; the agent's answer is restify 4's text form of
    // NotFoundError('container not found'), which CMON reads.
    const missing = newUuid();
    const unknown = await cmonScrape('127.0.0.2', port, `/v1/${missing}/metrics`, { 'x-joyent-cmon-opts': CORE_HEADER(false) });
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toBe('text/plain');
    expect(unknown.text).toBe('container not found');
    for (const headers of [{ 'x-joyent-cmon-opts': CORE_HEADER(true) }, {}] as Record<string, string>[]) {
      const res = await cmonScrape('127.0.0.2', port, `/v1/${stopped.uuid}/metrics`, headers);
      expect([res.status, res.headers['content-type'], res.text]).toEqual([404, 'text/plain', 'container not found']);
    }
    // Without the header the agent loads the VM first (vmadm get), and that fails.
    const unloaded = await cmonScrape('127.0.0.2', port, `/v1/${missing}/metrics`);
    expect([unloaded.status, unloaded.headers['content-type'], unloaded.text]).toEqual([500, 'text/plain', `vmadm load ${missing} failed: No such zone`]);

    for (const bad of [CORE_HEADER('yes'), Buffer.from('not json').toString('base64'), Buffer.from('{}').toString('base64')]) {
      const res = await raw('127.0.0.2', port, 'GET', `/v1/${running.uuid}/metrics`, { 'x-joyent-cmon-opts': bad });
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toBe('text/plain');
      expect(res.body.toString()).toBe('Error parsing x-joyent-cmon-opts header');
    }
    expect((await raw('127.0.0.2', port, 'GET', `/v1/${running.uuid}/metrics`)).status).toBe(200);

    const refresh = await raw('127.0.0.2', port, 'POST', '/v1/refresh');
    expect(refresh.status).toBe(200);
  });

  it('gzips when the client accepts gzip', async () => {
    const cn = await fleet.addCn({ agentIp: '127.0.0.2' });
    const vm = await webVm(cn);
    const { port } = await startAgent({ bind: 'agent-ips' });
    const res = await raw('127.0.0.2', port, 'GET', `/v1/${vm.uuid}/metrics`, { 'accept-encoding': 'gzip', 'x-joyent-cmon-opts': CORE_HEADER(false) });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    const f = parsePrometheus(zlib.gunzipSync(res.body).toString('utf8'));
    expect(single(f, 'mem_limit')).toBe(2048 * 1024 * 1024);
    const plain = await raw('127.0.0.2', port, 'GET', `/v1/${vm.uuid}/metrics`);
    expect(plain.headers['content-encoding']).toBeUndefined();
    parsePrometheus(plain.body.toString('utf8'));
  });

  it('per-CN agent IPs: /v1/gz/metrics answers for the CN whose address was called', async () => {
    const a = await fleet.addCn({ agentIp: '127.0.0.2' });
    const b = await fleet.addCn({ agentIp: '127.0.0.3' });
    a.sysinfo['CPU Total Cores'] = 4;
    b.sysinfo['CPU Total Cores'] = 6;
    b.sysinfo['Zpool Size in GiB'] = 100;
    await webVm(a);
    const { port } = await startAgent({ bind: 'agent-ips' });
    expect(agent!.addresses().map((x) => x.ip).sort()).toEqual(['127.0.0.2', '127.0.0.3']);

    const fa = parsePrometheus((await cmonScrape(netconfig.agentIpFromSysinfo(a.sysinfo), port, '/v1/gz/metrics')).text);
    const fb = parsePrometheus((await cmonScrape(netconfig.agentIpFromSysinfo(b.sysinfo), port, '/v1/gz/metrics')).text);
    expect(fa.get('cpu_user_seconds_total')!.samples).toHaveLength(4);
    expect(fb.get('cpu_user_seconds_total')!.samples).toHaveLength(6);
    expect(fb.get('zpool_size_bytes')!.samples[0]).toEqual({ labels: { pool: 'zones' }, value: 100 * 1024 ** 3 });
    for (const name of ['time_of_day', 'arcstats_size_bytes', 'cpu_info_model', 'zpool_allocated_bytes', 'ntp_metrics_available_boolean']) {
      expect(fa.has(name), name).toBe(true);
    }
    // A VM is only found on its own CN's address.
    const vmA = fleet.get(a.uuid)!.vms.list()[0]!;
    expect((await raw('127.0.0.3', port, 'GET', `/v1/${vmA.uuid}/metrics`, { 'x-joyent-cmon-opts': CORE_HEADER(false) })).status).toBe(404);
    expect((await raw('127.0.0.2', port, 'GET', `/v1/${vmA.uuid}/metrics`)).status).toBe(200);

    // The last CN on an address takes its socket with it.
    fleet.cns.delete(b.uuid);
    agent!.detach(b.uuid);
    await new Promise((r) => setTimeout(r, 50));
    expect(agent!.addresses().map((x) => x.ip)).toEqual(['127.0.0.2']);
  });

  it('per-CN agent IPs: tells its watchers when a CN that attaches later has its socket, and when the socket goes', async () => {
    const a = await fleet.addCn({ agentIp: '127.0.0.2' });
    await startAgent({ bind: 'agent-ips' });
    // What a watcher (the daemon writing daemon.json) reads at each call.
    const seen: string[][] = [];
    const unwatch = agent!.watchAddresses(() => seen.push(agent!.addresses().map((x) => x.ip).sort()));

    const b = await fleet.addCn({ agentIp: '127.0.0.3' });
    agent!.attach(b);
    await agent!.settled();
    expect(seen).toEqual([['127.0.0.2', '127.0.0.3']]);

    fleet.cns.delete(a.uuid);
    await agent!.detach(a.uuid);
    expect(seen.at(-1)).toEqual(['127.0.0.3']);
    unwatch();
    fleet.cns.delete(b.uuid);
    await agent!.detach(b.uuid);
    expect(agent!.addresses()).toEqual([]);
    expect(seen).toHaveLength(2);
  });

  it('shared IP: VM metrics work for every CN; /v1/gz/metrics needs the Host header to name the CN', async () => {
    const a = await fleet.addCn({ agentIp: '127.0.0.1' });
    const b = await fleet.addCn({ agentIp: '127.0.0.1' });
    b.sysinfo['CPU Total Cores'] = 3;
    const vmA = await webVm(a);
    const vmB = await webVm(b);
    const { port } = await startAgent({ bind: ['127.0.0.1'] });

    expect((await cmonScrape('127.0.0.1', port, `/v1/${vmA.uuid}/metrics`, { 'x-joyent-cmon-opts': CORE_HEADER(false) })).status).toBe(200);
    expect((await cmonScrape('127.0.0.1', port, `/v1/${vmB.uuid}/metrics`, { 'x-joyent-cmon-opts': CORE_HEADER(false) })).status).toBe(200);

    const ambiguous = await raw('127.0.0.1', port, 'GET', '/v1/gz/metrics');
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.toString()).toMatch(/2 mock CNs share IP 127\.0\.0\.1/);

    const named = await raw('127.0.0.1', port, 'GET', '/v1/gz/metrics', { host: `${b.uuid}:${port}` });
    expect(named.status).toBe(200);
    expect(parsePrometheus(named.body.toString()).get('cpu_idle_seconds_total')!.samples).toHaveLength(3);
    const stranger = await raw('127.0.0.1', port, 'GET', '/v1/gz/metrics', { host: `${newUuid()}.cmon.testdc.example.com` });
    expect(stranger.status).toBe(404);
  });

  // triton-cmon lib/endpoints/metrics.js: CMON asks `http://<admin_ip>:9163/v1/gz/metrics` with a
  // restify client that sets no Host of its own, so the Host header is `<admin_ip>:9163`.
  // Here both CNs are reached on one shared address (a NAT or proxy in front of it keeps the Host).
  it('shared IP: /v1/gz/metrics answers for the CN whose Admin IP the Host header carries', async () => {
    const a = await fleet.addCn({ agentIp: '127.0.0.1', adminIp: '10.99.99.41' });
    const b = await fleet.addCn({ agentIp: '127.0.0.1', adminIp: '10.99.99.42' });
    a.sysinfo['CPU Total Cores'] = 4;
    b.sysinfo['CPU Total Cores'] = 6;
    b.sysinfo['Zpool Size in GiB'] = 100;
    const vmA = await webVm(a);
    const vmB = await webVm(b);
    const { port } = await startAgent({ bind: ['127.0.0.1'] });

    const gz = async (adminIp: string) => {
      const res = await raw('127.0.0.1', port, 'GET', '/v1/gz/metrics', { host: `${adminIp}:9163` });
      expect(res.status, res.body.toString()).toBe(200);
      return parsePrometheus(res.body.toString());
    };
    const fa = await gz('10.99.99.41');
    const fb = await gz('10.99.99.42');
    expect(fa.get('cpu_user_seconds_total')!.samples).toHaveLength(4);
    expect(fb.get('cpu_user_seconds_total')!.samples).toHaveLength(6);
    expect(fb.get('zpool_size_bytes')!.samples[0]).toEqual({ labels: { pool: 'zones' }, value: 100 * 1024 ** 3 });
    expect(fa.get('zpool_size_bytes')!.samples[0]!.value).not.toBe(100 * 1024 ** 3);
    // Without a port, as a Host header for port 80 reads, it is the same CN.
    const noPort = await raw('127.0.0.1', port, 'GET', '/v1/gz/metrics', { host: '10.99.99.42' });
    expect(parsePrometheus(noPort.body.toString()).get('cpu_user_seconds_total')!.samples).toHaveLength(6);

    // A VM is found on its own CN only, as a real cmon-agent knows only its CN's zones.
    const opts = { 'x-joyent-cmon-opts': CORE_HEADER(false) };
    expect((await raw('127.0.0.1', port, 'GET', `/v1/${vmA.uuid}/metrics`, { ...opts, host: '10.99.99.41:9163' })).status).toBe(200);
    expect((await raw('127.0.0.1', port, 'GET', `/v1/${vmB.uuid}/metrics`, { ...opts, host: '10.99.99.41:9163' })).status).toBe(404);
    expect((await raw('127.0.0.1', port, 'GET', `/v1/${vmB.uuid}/metrics`, { ...opts, host: '10.99.99.42:9163' })).status).toBe(200);

    // An IP that is no CN's admin IP names nothing: the shared address is ambiguous again.
    const other = await raw('127.0.0.1', port, 'GET', '/v1/gz/metrics', { host: '10.99.99.99:9163' });
    expect(other.status).toBe(409);
    // Two CNs with one admin IP (no NAPI: every admin IP is the bind IP) cannot be told apart.
    const c = await fleet.addCn({ agentIp: '127.0.0.1', adminIp: '10.99.99.41' });
    agent!.attach(c);
    const twins = await raw('127.0.0.1', port, 'GET', '/v1/gz/metrics', { host: '10.99.99.41:9163' });
    expect(twins.status).toBe(409);
    expect(twins.body.toString()).toMatch(/share IP 10\.99\.99\.41/);
  });
});
