/** Configuration: the documented order flag > env > config file > mdata > default, and validation. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ADMIN_UUID } from '../../src/common/triton-defaults.js';
import { DEFAULT_BIND_IP, resolveConfig } from '../../src/daemon/config.js';
import { noMdata, staticMdata } from '../../src/daemon/mdata.js';

describe('daemon configuration', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-config-'));
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  const mdata = staticMdata({
    'sdc:datacenter_name': 'us-east-9',
    dnsDomain: 'example.org',
    ufdsAdmin: '11111111-2222-4333-8444-555555555555',
    'sdc:nics': JSON.stringify([
      { interface: 'net1', ip: '10.1.1.5', nic_tag: 'external' },
      { interface: 'net0', ip: '10.99.99.42', nic_tag: 'admin' },
    ]),
  });

  it('derives the Triton API URLs, admin user and bind IP from SmartOS mdata', async () => {
    const c = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata });
    expect(c.urls).toEqual({
      cnapi: 'http://cnapi.us-east-9.example.org',
      vmapi: 'http://vmapi.us-east-9.example.org',
      napi: 'http://napi.us-east-9.example.org',
      imgapi: 'http://imgapi.us-east-9.example.org',
      sapi: 'http://sapi.us-east-9.example.org',
      fwapi: 'http://fwapi.us-east-9.example.org',
    });
    expect(c.sources.cnapiUrl).toBe('derived');
    expect(c.sources.sapiUrl).toBe('derived');
    expect(c.sources.fwapiUrl).toBe('derived');
    expect(c.adminUuid).toBe('11111111-2222-4333-8444-555555555555');
    expect(c.bindIp).toBe('10.99.99.42');
    expect(c.datacenterName).toBe('us-east-9');
  });

  it("reads allowExecute (off by default) and bootSeconds (the timing profile's by default) like the other settings", async () => {
    const d = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect([d.allowExecute, d.bootSeconds]).toEqual([false, undefined]);
    expect(d.sources).toMatchObject({ allowExecute: 'default', bootSeconds: 'default' });
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ allowExecute: true, bootSeconds: 30 }));
    const f = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect([f.allowExecute, f.bootSeconds]).toEqual([true, 30]);
    const e = await resolveConfig({
      flags: { dataDir: dir, bootSeconds: '0.5' },
      env: { MOCKCLOUD_ALLOW_EXECUTE: 'false' },
      mdata: noMdata,
    });
    expect([e.allowExecute, e.bootSeconds]).toEqual([false, 0.5]);
    expect(e.sources).toMatchObject({ allowExecute: 'env', bootSeconds: 'flag' });
    await expect(resolveConfig({ flags: { dataDir: dir, allowExecute: 'maybe' }, env: {}, mdata: noMdata })).rejects.toThrow(
      /not a boolean.*--allow-execute/,
    );
    await expect(resolveConfig({ flags: { dataDir: dir, bootSeconds: '-1' }, env: {}, mdata: noMdata })).rejects.toThrow(
      /not a number of seconds.*--boot-seconds/,
    );
  });

  it('takes a flag over the environment over the config file over mdata', async () => {
    await fsp.writeFile(
      path.join(dir, 'config.json'),
      JSON.stringify({ cnapiUrl: 'http://file-cnapi', vmapiUrl: 'http://file-vmapi', napiUrl: 'http://file-napi', controlPort: 7000 }),
    );
    const c = await resolveConfig({
      flags: { dataDir: dir, cnapiUrl: 'http://flag-cnapi' },
      env: { MOCKCLOUD_CNAPI_URL: 'http://env-cnapi', MOCKCLOUD_VMAPI_URL: 'http://env-vmapi/' },
      mdata,
    });
    expect(c.urls.cnapi).toBe('http://flag-cnapi');
    expect(c.urls.vmapi).toBe('http://env-vmapi');
    expect(c.urls.napi).toBe('http://file-napi');
    expect(c.urls.imgapi).toBe('http://imgapi.us-east-9.example.org');
    expect(c.controlPort).toBe(7000);
    expect(c.sources).toMatchObject({ cnapiUrl: 'flag', vmapiUrl: 'env', napiUrl: 'file', imgapiUrl: 'derived', controlPort: 'file' });
    expect(c.configFile).toBe(path.join(dir, 'config.json'));
  });

  it('takes the SAPI URL from --sapi-url, MOCKCLOUD_SAPI_URL or sapiUrl, and refuses a bad one', async () => {
    const flag = await resolveConfig({ flags: { dataDir: dir, sapiUrl: 'http://10.99.99.30/' }, env: {}, mdata: noMdata });
    expect(flag.urls.sapi).toBe('http://10.99.99.30');
    expect(flag.sources.sapiUrl).toBe('flag');
    const env = await resolveConfig({ flags: { dataDir: dir }, env: { MOCKCLOUD_SAPI_URL: 'http://sapi.env' }, mdata: noMdata });
    expect(env.urls.sapi).toBe('http://sapi.env');
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ sapiUrl: 'http://sapi.file' }));
    const file = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect(file.urls.sapi).toBe('http://sapi.file');
    expect(file.sources.sapiUrl).toBe('file');
    await fsp.rm(path.join(dir, 'config.json'));
    // Without any of them, and without mdata to derive it from, there is no SAPI.
    expect((await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata })).urls.sapi).toBeUndefined();
    await expect(resolveConfig({ flags: { dataDir: dir, sapiUrl: 'sapi.example' }, env: {}, mdata: noMdata })).rejects.toThrow(
      /--sapi-url \/ MOCKCLOUD_SAPI_URL/,
    );
  });

  it('finds the data dir from the environment, then mdata mockcloudRoot', async () => {
    const env = await resolveConfig({ env: { MOCKCLOUD_DATA_DIR: dir }, mdata: noMdata });
    expect(env.dataDir).toBe(dir);
    const md = await resolveConfig({ env: {}, mdata: staticMdata({ mockcloudRoot: dir }) });
    expect(md.dataDir).toBe(dir);
    expect(md.sources.dataDir).toBe('mdata');
  });

  it('reads --config, which may name the data dir', async () => {
    const file = path.join(dir, 'elsewhere.json');
    await fsp.writeFile(file, JSON.stringify({ dataDir: path.join(dir, 'data'), bindIp: '127.0.0.5', portRange: '20000-20100' }));
    const c = await resolveConfig({ flags: { config: file }, env: {}, mdata: noMdata });
    expect(c.dataDir).toBe(path.join(dir, 'data'));
    expect(c.bindIp).toBe('127.0.0.5');
    expect(c.portRange).toEqual([20000, 20100]);
  });

  it('refuses a config file over 1 MiB by name, before parsing it', async () => {
    const file = path.join(dir, 'huge.json');
    await fsp.writeFile(file, JSON.stringify({ bindIp: '127.0.0.5', pad: 'x'.repeat(1024 * 1024) }));
    await expect(resolveConfig({ flags: { config: file }, env: {}, mdata: noMdata })).rejects.toThrow(`${file} is over 1 MiB: too large for a config file`);
  });

  it('has standalone defaults without any source', async () => {
    const c = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect(c.urls).toEqual({});
    expect(c.bindIp).toBe(DEFAULT_BIND_IP);
    expect(c.controlPort).toBe(0);
    expect(c.adminUuid).toBe(DEFAULT_ADMIN_UUID);
    expect(c.portRange).toBeUndefined();
  });

  it('refuses bad values with a message naming the flag and variable', async () => {
    const bad = async (flags: Record<string, string>) => resolveConfig({ flags: { dataDir: dir, ...flags }, env: {}, mdata: noMdata });
    await expect(bad({ cnapiUrl: 'not a url' })).rejects.toThrow(/--cnapi-url \/ MOCKCLOUD_CNAPI_URL/);
    await expect(bad({ cnapiUrl: 'ftp://x' })).rejects.toThrow(/http/);
    await expect(bad({ bindIp: 'localhost' })).rejects.toThrow(/--bind-ip/);
    // Every CN would advertise it to CNAPI as its CN Agent IP.
    await expect(bad({ bindIp: '0.0.0.0' })).rejects.toThrow(/wildcard.*--bind-ip/);
    await expect(bad({ bindIp: '::' })).rejects.toThrow(/wildcard.*--bind-ip/);
    await expect(bad({ portRange: '9000-8000' })).rejects.toThrow(/--port-range/);
    await expect(bad({ portRange: '0-10' })).rejects.toThrow(/port/);
    await expect(bad({ controlPort: '70000' })).rejects.toThrow(/--control-port/);
    await expect(bad({ adminUuid: 'admin' })).rejects.toThrow(/--admin-uuid/);
    await expect(bad({ logLevel: 'loud' })).rejects.toThrow(/--log-level/);
    await expect(bad({ maxTasks: '0' })).rejects.toThrow(/--max-tasks \//);
    await expect(bad({ maxTasksPerServer: 'many' })).rejects.toThrow(/--max-tasks-per-server/);
    await expect(bad({ maxConnections: '-5' })).rejects.toThrow(/--max-connections/);
  });

  it('takes --metrics-address as IP[:PORT] (8881 by default, 0 any) from a flag, env, file or mdata, and refuses a bad one', async () => {
    const none = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect(none.metricsAddress).toBeUndefined();
    const flag = await resolveConfig({ flags: { dataDir: dir, metricsAddress: '127.0.0.1:0' }, env: {}, mdata: noMdata });
    expect(flag.metricsAddress).toEqual({ ip: '127.0.0.1', port: 0 });
    const env = await resolveConfig({ flags: { dataDir: dir }, env: { MOCKCLOUD_METRICS_ADDRESS: '[::1]:9100' }, mdata: noMdata });
    expect(env.metricsAddress).toEqual({ ip: '::1', port: 9100 });
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ metricsAddress: '10.99.99.42' }));
    const file = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect(file.metricsAddress).toEqual({ ip: '10.99.99.42', port: 8881 });
    expect(file.sources.metricsAddress).toBe('file');
    await fsp.rm(path.join(dir, 'config.json'));
    const md = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: staticMdata({ mockcloudMetricsAddress: '10.99.99.42:9200' }) });
    expect(md.metricsAddress).toEqual({ ip: '10.99.99.42', port: 9200 });
    expect(md.sources.metricsAddress).toBe('mdata');
    for (const bad of ['metrics.example.com:8881', '10.0.0.1:', '10.0.0.1:99999']) {
      await expect(resolveConfig({ flags: { dataDir: dir, metricsAddress: bad }, env: {}, mdata: noMdata })).rejects.toThrow(
        /--metrics-address \/ MOCKCLOUD_METRICS_ADDRESS/,
      );
    }
  });

  it('takes the task and connection bounds from flags, env or file', async () => {
    const c = await resolveConfig({
      flags: { dataDir: dir, maxTasks: '64', maxQueuedTasks: '0' },
      env: { MOCKCLOUD_MAX_TASKS_PER_SERVER: '4', MOCKCLOUD_MAX_CONNECTIONS: '1000' },
      mdata: noMdata,
    });
    expect(c).toMatchObject({ maxTasks: 64, maxTasksPerServer: 4, maxQueuedTasks: 0, maxConnections: 1000 });
    expect(c.sources).toMatchObject({ maxTasks: 'flag', maxTasksPerServer: 'env' });
  });

  it('takes the main thread nice from flag or env, 0 to 19, and refuses past it naming both', async () => {
    const c = await resolveConfig({ flags: { dataDir: dir }, env: { MOCKCLOUD_MAIN_THREAD_NICE: '0' }, mdata: noMdata });
    expect(c.mainThreadNice).toBe(0);
    expect((await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata })).mainThreadNice).toBeUndefined();
    for (const bad of ['20', '-1', 'high']) {
      await expect(resolveConfig({ flags: { dataDir: dir, mainThreadNice: bad }, env: {}, mdata: noMdata })).rejects.toThrow(
        /--main-thread-nice \/ MOCKCLOUD_MAIN_THREAD_NICE/,
      );
    }
  });

  it('takes test timings from the config file only, validated', async () => {
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ timings: { heartbeatIntervalMs: 100, sysinfoBackoff: { minMs: 10 } } }));
    const c = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect(c.timings).toEqual({ heartbeatIntervalMs: 100, sysinfoBackoff: { minMs: 10 } });
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ timings: { heartbeatMs: 100 } }));
    await expect(resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata })).rejects.toThrow(/timings.heartbeatMs" is unknown/);
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ timings: { heartbeatIntervalMs: -1 } }));
    await expect(resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata })).rejects.toThrow(/must be a number > 0/);
  });

  it('refuses a config file with unknown keys or bad JSON', async () => {
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ cnapi_url: 'http://x' }));
    await expect(resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata })).rejects.toThrow(/unknown key\(s\) cnapi_url/);
    await fsp.writeFile(path.join(dir, 'config.json'), '{"cnapiUrl":');
    await expect(resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata })).rejects.toThrow(/not valid JSON/);
  });
});
