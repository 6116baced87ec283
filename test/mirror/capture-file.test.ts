/**
 * The pieces of src/mirror that need no DC: the capture file (written streaming, the header's
 * counts in front; a file cut short, of another format or version, refused), redaction's
 * mappings (one replacement per value, subnets moved whole, the admin's things kept) and a
 * captured server's hardware as the control API takes it.
 */
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSysinfo } from '../../src/mockcn/sysinfo-template.js';
import { getProfile } from '../../src/mockcn/profiles.js';
import { profileFromObject } from '../../src/mockcn/profile-files.js';
import { CaptureWriter, readCapture, readCaptureHeader } from '../../src/mirror/format.js';
import { hardwareOf } from '../../src/mirror/hardware.js';
import { Redactor } from '../../src/mirror/redact.js';

const ADMIN = '930896af-bf8c-48d4-885c-6573a94b1853';
const OWNER = '5b6e4f7c-1d2e-4a3b-8c9d-0e1f2a3b4c5d';

describe('the capture file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-capture-'));
  });
  afterAll(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('is the header with the counts, the records in order, and the end line; read back as written', async () => {
    const file = path.join(dir, 'a.gz');
    const w = new CaptureWriter(file);
    await w.write('network', { uuid: 'n1' });
    for (let i = 0; i < 3; i++) await w.write('vm', { uuid: `v${i}` });
    await expect(w.write('server', { uuid: 's' })).rejects.toThrow(/out of order/);
    const header = await w.finish({ source: { cnapi: 'c', vmapi: 'v', napi: 'n' }, capturedAt: 'now', durationMs: 1, redacted: true, vmStates: ['active'], adminUuid: ADMIN, skipped: [] });
    expect(header.counts).toMatchObject({ network: 1, vm: 3, server: 0 });
    expect(await fsp.readdir(dir)).toEqual(['a.gz']);
    const lines = zlib.gunzipSync(await fsp.readFile(file)).toString().trimEnd().split('\n');
    expect(JSON.parse(lines[0]!)).toMatchObject({ kind: 'header', format: 'mockcloud-mirror', version: 1, counts: { vm: 3 } });
    expect(lines.at(-1)).toBe('{"kind":"end"}');
    const read = [];
    for await (const item of readCapture(file)) read.push(item.kind === 'header' ? 'header' : `${item.kind}:${String(item.data.uuid)}`);
    expect(read).toEqual(['header', 'network:n1', 'vm:v0', 'vm:v1', 'vm:v2']);
    expect((await readCaptureHeader(file)).counts.vm).toBe(3);
  });

  it('refuses a file cut short, another version, or no capture at all', async () => {
    const good = zlib.gunzipSync(await fsp.readFile(path.join(dir, 'a.gz'))).toString();
    const write = async (name: string, text: string): Promise<string> => {
      const f = path.join(dir, name);
      await fsp.writeFile(f, zlib.gzipSync(text));
      return f;
    };
    const drain = async (f: string): Promise<void> => {
      for await (const _ of readCapture(f)) void _;
    };
    await expect(drain(await write('cut.gz', good.replace('{"kind":"end"}\n', '')))).rejects.toThrow(/cut short/);
    await expect(drain(await write('v2.gz', good.replace('"version":1', '"version":2')))).rejects.toThrow(/format version 2/);
    await expect(drain(await write('other.gz', '{"hello":1}\n'))).rejects.toThrow(/not a mockcloud mirror header/);
    const plain = path.join(dir, 'plain.json');
    await fsp.writeFile(plain, good);
    await expect(drain(plain)).rejects.toThrow(/not gzip/);
    await expect(drain(path.join(dir, 'no-such-capture.gz'))).rejects.toThrow(/is not a usable capture: ENOENT/);
    // Bytes cut off the end of the gzip stream itself.
    const gz = await fsp.readFile(path.join(dir, 'a.gz'));
    const torn = path.join(dir, 'torn.gz');
    await fsp.writeFile(torn, gz.subarray(0, gz.length - 20));
    await expect(drain(torn)).rejects.toThrow(/not gzip or cut short|cut short/);
  });

  it('says what is wrong in words that fit: a version that is a string, a record of the wrong shape, blank lines, extra records', async () => {
    const good = zlib.gunzipSync(await fsp.readFile(path.join(dir, 'a.gz'))).toString();
    const lines = good.trimEnd().split('\n');
    const write = async (name: string, text: string): Promise<string> => {
      const f = path.join(dir, name);
      await fsp.writeFile(f, zlib.gzipSync(text));
      return f;
    };
    const problem = async (f: string): Promise<string> => {
      try {
        for await (const _ of readCapture(f)) void _;
      } catch (err) {
        return (err as Error).message;
      }
      return 'read without a problem';
    };
    const v1 = await problem(await write('v-string.gz', good.replace('"version":1', '"version":"1"')));
    expect(v1).toMatch(/"version" is "1" \(string\); a capture's version is the number 1/);
    expect(v1).not.toMatch(/format version 1; this mockcloud reads version 1/);
    const arrayData = [lines[0], '{"kind":"network","data":[1,2]}', ...lines.slice(2)].join('\n');
    expect(await problem(await write('array.gz', arrayData))).toMatch(/line 2 is a network record with "data" an array; its data must be a JSON object/);
    const unknownKind = [lines[0], '{"kind":"router","data":{}}', ...lines.slice(2)].join('\n');
    expect(await problem(await write('kind.gz', unknownKind))).toMatch(/line 2 has kind "router"; a record's kind is one of nic_tag, network/);
    expect(await problem(await write('blank.gz', good.replace('\n', '\n\n\n')))).toMatch(/line 2 is empty/);
    const extra = [lines[0], lines[1], lines[1], ...lines.slice(2)].join('\n');
    expect(await problem(await write('extra.gz', extra))).toMatch(/line 3 is network record 2, but the header counts 1/);
  });

  it('refuses a line over the limit, naming it, and reads it with the limit raised', async () => {
    const good = zlib.gunzipSync(await fsp.readFile(path.join(dir, 'a.gz'))).toString();
    const lines = good.trimEnd().split('\n');
    const big = JSON.stringify({ kind: 'network', data: { uuid: 'n1', description: 'x'.repeat(3 * 1024 * 1024) } });
    const f = path.join(dir, 'big-line.gz');
    await fsp.writeFile(f, zlib.gzipSync([lines[0], big, ...lines.slice(2)].join('\n')));
    const drain = async (limits: { maxLineBytes?: number; maxBytes?: number }): Promise<number> => {
      let n = 0;
      for await (const _ of readCapture(f, limits)) n++;
      return n;
    };
    await expect(drain({ maxLineBytes: 1024 * 1024 })).rejects.toThrow(/line 2 is over 1 MiB .*--max-line-mib/);
    expect(await drain({ maxLineBytes: 4 * 1024 * 1024 })).toBe(5);
    await expect(drain({ maxBytes: 2 * 1024 * 1024 })).rejects.toThrow(/over 2 MiB decompressed \(line 2\).*--max-size-gib/);
  });
});

describe('redaction', () => {
  const r = new Redactor(ADMIN);

  it('moves each customer subnet whole to 10.128.0.0/9, keeping offsets; the admin network stays', () => {
    const ext = r.network({ name: 'external', nic_tag: 'external', subnet: '203.0.113.0/24', gateway: '203.0.113.1', provision_start_ip: '203.0.113.10', provision_end_ip: '203.0.113.250', resolvers: ['203.0.113.2', '8.8.8.8'], routes: { '203.0.113.0/25': '203.0.113.3' } });
    expect(ext).toMatchObject({ subnet: '10.128.0.0/24', gateway: '10.128.0.1', provision_start_ip: '10.128.0.10', provision_end_ip: '10.128.0.250', resolvers: ['10.128.0.2', '8.8.8.8'], routes: { '10.128.0.0/25': '10.128.0.3' } });
    const big = r.network({ name: 'big', nic_tag: 'x', subnet: '198.51.100.0/23' });
    expect(big.subnet).toBe('10.128.2.0/23');
    // Another VLAN on the same subnet moves with it.
    expect(r.network({ name: 'again', nic_tag: 'y', subnet: '203.0.113.0/24' }).subnet).toBe('10.128.0.0/24');
    const admin = r.network({ name: 'admin', nic_tag: 'admin', subnet: '10.99.0.0/16', gateway: '10.99.99.7' });
    expect(admin).toMatchObject({ subnet: '10.99.0.0/16', gateway: '10.99.99.7' });
    const nic = r.nic({ ip: '203.0.113.77', gateway: '203.0.113.1', ips: ['203.0.113.77/24'], owner_uuid: OWNER });
    expect(nic).toMatchObject({ ip: '10.128.0.77', gateway: '10.128.0.1', ips: ['10.128.0.77/24'] });
    expect(r.ip('10.99.99.40')).toBe('10.99.99.40');
  });

  it('maps owners one to one and keeps the admin; aliases and hostnames to unique stable names; metadata and tag values gone', () => {
    const vm = (alias: string, owner: string) =>
      r.vm({ alias, owner_uuid: owner, customer_metadata: { k: 'secret', n: 1 }, tags: { role: 'db', n: 2, on: true }, internal_metadata: { 'docker:env': 'X=1' }, nics: [] });
    const a = vm('web-1', OWNER);
    const b = vm('web-2', OWNER);
    const c = vm('web-1', ADMIN);
    expect(a.owner_uuid).toBe(b.owner_uuid);
    expect(a.owner_uuid).not.toBe(OWNER);
    expect(a.owner_uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(c.owner_uuid).toBe(ADMIN);
    expect(a.alias).toBe(c.alias);
    expect(a.alias).not.toBe(b.alias);
    expect(a.alias).toMatch(/^vm-[0-9a-f]{12}$/);
    expect(a.customer_metadata).toEqual({ k: 'redacted', n: 'redacted' });
    expect(a.tags).toEqual({ role: 'redacted', n: 2, on: true });
    expect(a.internal_metadata).toEqual({ 'docker:env': 'redacted' });
    const s = r.server({ uuid: 'u', hostname: 'db-rack-7', sysinfo: { Hostname: 'db-rack-7' } });
    expect(s.hostname).toMatch(/^cn-[0-9a-f]{12}$/);
    expect((s.sysinfo as Record<string, unknown>).Hostname).toBe(s.hostname);
    // Another capture (another secret): other names; the same key (--redact-key-file): the same.
    expect(new Redactor(ADMIN).vmName('web-1')).not.toBe(a.alias);
    const key = Buffer.from('a key of at least sixteen');
    expect(new Redactor(ADMIN, key).vmName('web-1')).toBe(new Redactor(ADMIN, key).vmName('web-1'));
    expect(new Redactor(ADMIN, key).owner(OWNER)).toBe(new Redactor(ADMIN, key).owner(OWNER));
  });
});

describe("a captured server's hardware", () => {
  it('is a profile the control API takes, with the sysinfo figures, NIC tags and CNAPI placement', () => {
    const sysinfo = buildSysinfo({
      uuid: '11111111-2222-4333-8444-555555555555',
      profile: { ...getProfile('large'), nics: [{ tags: ['external'] }, { tags: ['storage', 'blue'] }] },
      datacenterName: 'dc',
      platform: '20240101T000000Z',
      adminMac: '00:10:fe:00:00:02',
      adminIp: '10.99.99.40',
      extraMac: '00:10:fe:00:00:03',
    });
    const { hardware, lost } = hardwareOf({ uuid: sysinfo.UUID, sysinfo, traits: { ssd: true }, reserved: true, overprovision_ratios: { cpu: 4 } });
    expect(lost).toEqual([]);
    const p = profileFromObject(hardware, 'hardware');
    const large = getProfile('large');
    expect(p).toMatchObject({
      cpuPhysicalCores: large.cpuPhysicalCores,
      cpuCoreCount: large.cpuCoreCount,
      cpuTotalCores: large.cpuTotalCores,
      memoryMiB: large.memoryMiB,
      diskCount: large.diskCount,
      diskSizeGB: large.diskSizeGB,
      zpoolProfile: 'raidz2',
      platform: '20240101T000000Z',
      nics: [{ tags: ['external'] }, { tags: ['storage', 'blue'] }],
      placement: { traits: { ssd: true }, reserved: true, overprovisionRatios: { cpu: 4 } },
    });
    expect(() => profileFromObject({ ...hardware, cpuCoreCount: 3 }, 'hardware')).toThrow(/not a multiple of cpuPhysicalCores/);
    expect(() => profileFromObject({ ...hardware, gpu: 1 }, 'hardware')).toThrow(/unknown key "gpu"/);
  });
});
