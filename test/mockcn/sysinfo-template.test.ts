/**
 * A new mock CN's sysinfo has every key a SmartOS CN's `sysinfo` prints, in its order
 * (smartos-live src/sysinfo, output_json), the original mockcloud template's values
 * (cn-agent-spec §5.3) and a hardware profile's figures; an older sysinfo.json is completed
 * when read, keeping what it has.
 */
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { newUuid } from '../../src/common/uuid.js';
import { BUILTIN_AGENTS } from '../../src/mockcn/agents-dir.js';
import { getProfile, PROFILES } from '../../src/mockcn/profiles.js';
import { buildSysinfo, randomMockMac, serializeNewSysinfo } from '../../src/mockcn/sysinfo-template.js';
import { parseSysinfo, sysinfoHardware } from '../../src/mockcn/sysinfo-file.js';
import { REAL_SYSINFO_KEYS } from './real-cn.js';

const require = createRequire(import.meta.url);
const netconfig = require('triton-netconfig') as {
  adminIpFromSysinfo(s: unknown): string;
  agentIpFromSysinfo(s: unknown): string;
};

/** The original create-server template's keys, in its order (cn-agent-spec §5.3). */
const ORIGINAL_KEYS = [
  'System Type', 'SDC Version', 'Manufacturer', 'Product', 'SKU Number', 'HW Version', 'HW Family', 'Setup',
  'VM Capable', 'Bhyve Capable', 'Bhyve Max Vcpus', 'CPU Type', 'CPU Virtualization', 'CPU Physical Cores',
  'CPU Total Cores', 'MiB of Memory', 'Zpool', 'Zpool Disks', 'Zpool Profile', 'Disks', 'Boot Parameters',
  'SDC Agents', 'Network Interfaces', 'Virtual Network Interfaces', 'Link Aggregations', 'Datacenter Name', 'UUID',
  'Admin IP', 'Zpool Size in GiB', 'Live Image', 'Boot Time', 'Hostname', 'Serial Number', 'Zpool Creation',
];

function make(profile = 'virtual', hostnamePrefix?: string) {
  const uuid = newUuid();
  const adminMac = randomMockMac();
  const extraMac = randomMockMac();
  const now = Date.UTC(2024, 0, 2, 3, 4, 5);
  const sysinfo = buildSysinfo({
    uuid,
    profile: getProfile(profile),
    datacenterName: 'coal',
    platform: '20210826T002459Z',
    adminMac,
    adminIp: '10.99.99.41',
    extraMac,
    now,
    ...(hostnamePrefix ? { hostnamePrefix } : {}),
  });
  return { uuid, adminMac, extraMac, now, sysinfo };
}

describe('sysinfo template', () => {
  it('has every key of a real CN\'s sysinfo, in its order, with the original values', () => {
    const { uuid, sysinfo, adminMac, extraMac, now } = make();
    expect(Object.keys(sysinfo)).toEqual(REAL_SYSINFO_KEYS);
    expect(sysinfo).toMatchObject({
      'System Type': 'Virtual',
      'SDC Version': '7.0',
      Manufacturer: 'Joyent',
      Product: 'Joyent-Virtual-CN-0001',
      'SKU Number': '90210 rev 42',
      'HW Version': '1.0',
      'HW Family': 'JXX-0001',
      Setup: 'true',
      'VM Capable': true,
      'Bhyve Capable': true,
      'Bhyve Max Vcpus': 32,
      'CPU Type': 'Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz',
      'CPU Virtualization': 'vmx',
      'CPU Physical Cores': 2,
      'CPU Total Cores': 32,
      'MiB of Memory': '262111',
      Zpool: 'zones',
      'Zpool Profile': 'mirror',
      'Boot Parameters': { console: 'ttyb', boot_args: '', bootargs: '' },
      'Virtual Network Interfaces': {},
      'Link Aggregations': {},
      'Datacenter Name': 'coal',
      UUID: uuid,
      'Admin IP': '10.99.99.41',
      'Zpool Size in GiB': 3770,
      'Live Image': '20210826T002459Z',
      'Boot Time': String(Math.floor(now / 1000)),
      Hostname: `VC${uuid.slice(0, 8).toUpperCase()}`,
      'Serial Number': uuid.slice(0, 8).toUpperCase(),
      'Zpool Creation': Math.floor(now / 1000),
    });
    expect(typeof sysinfo['Boot Time']).toBe('string');
    expect(typeof sysinfo['Zpool Creation']).toBe('number');
    // The keys the original template lacked, as a CN with this hardware prints them.
    expect(sysinfo).toMatchObject({
      'HVM API': true,
      'Admin NIC Tag': 'admin',
      'CPU Socket Count': 2,
      'CPU Core Count': 16,
      'CPU Online Count': 32,
      'CPU Count': 32,
      'Zpool Encrypted': false,
      'Zpool Recovery': {},
      Psrinfo: { smt_enabled: 'true' },
    });
    // "SDC Agents": name and version of every agent the CN starts with (`json -a name version`).
    expect(sysinfo['SDC Agents']).toEqual(
      [...BUILTIN_AGENTS].sort((a, b) => (a.name < b.name ? -1 : 1)).map((a) => ({ name: a.name, version: a.version })),
    );
    expect(sysinfo['Network Interfaces']).toEqual({
      dnet0: { ip4addr: '10.99.99.41', 'Link Status': 'up', 'NIC Names': ['admin'], 'MAC Address': adminMac },
      dnet1: { ip4addr: '', 'Link Status': 'up', 'NIC Names': [], 'MAC Address': extraMac },
    });
  });

  it('has 16 disks named like the original, listed in Zpool Disks', () => {
    const { sysinfo } = make();
    const names = Object.keys(sysinfo.Disks);
    expect(names.length).toBe(16);
    names.forEach((n, i) => expect(n).toMatch(new RegExp(`^c${i}t5000[0-9A-F]{6}d0$`)));
    for (const d of Object.values(sysinfo.Disks)) expect(d).toEqual({ 'Size in GB': 600 });
    expect(sysinfo['Zpool Disks']).toBe(names.join(','));
  });

  it('uses mock MACs of the original OUI', () => {
    for (let i = 0; i < 20; i++) expect(randomMockMac()).toMatch(/^00:10:fe(:[0-9a-f]{2}){3}$/);
  });

  it('gives triton-netconfig the admin IP, and the agent IP once the CN listens', () => {
    const { sysinfo } = make();
    expect(netconfig.adminIpFromSysinfo(sysinfo)).toBe('10.99.99.41');
    sysinfo['CN Agent IP'] = '127.0.0.1';
    sysinfo['CN Agent Port'] = 40123;
    expect(netconfig.agentIpFromSysinfo(sysinfo)).toBe('127.0.0.1');
  });

  it('is written with 4-space indent and a trailing newline, like create-server', () => {
    const { sysinfo } = make();
    const text = serializeNewSysinfo(sysinfo);
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.split('\n')[1]).toBe('    "Live Image": "20210826T002459Z",');
    expect(text.split('\n')[2]).toBe('    "System Type": "Virtual",');
    expect(JSON.parse(text)).toEqual(sysinfo);
  });

  it('fills hardware from the chosen profile and a hostname prefix', () => {
    const small = make('small', 'MOCK').sysinfo;
    const p = getProfile('small');
    expect(small['CPU Total Cores']).toBe(p.cpuTotalCores);
    expect(small['MiB of Memory']).toBe(String(p.memoryMiB));
    expect(Object.keys(small.Disks).length).toBe(p.diskCount);
    expect(small.Hostname).toMatch(/^MOCK[0-9A-F]{8}$/);
    expect(sysinfoHardware(small).memoryBytes).toBe(p.memoryMiB * 1024 * 1024);
    expect(sysinfoHardware(small).poolSizeBytes).toBe(p.zpoolSizeGiB * 1024 ** 3);
    expect(PROFILES.size).toBeGreaterThanOrEqual(3);
    expect(() => getProfile('huge')).toThrow(/unknown hardware profile "huge"/);
  });

  it('keeps the CPU counts of every profile consistent, as psrinfo reports them', () => {
    for (const name of PROFILES.keys()) {
      const s = make(name).sysinfo;
      const p = getProfile(name);
      // Legacy names: "CPU Physical Cores" is the sockets, "CPU Total Cores" the threads.
      expect(s['CPU Socket Count'], name).toBe(s['CPU Physical Cores']);
      expect(s['CPU Count'], name).toBe(s['CPU Total Cores']);
      expect(s['CPU Online Count'], name).toBe(s['CPU Count']);
      expect(s['CPU Core Count'], name).toBe(p.cpuCoreCount);
      expect(s['CPU Core Count'] % s['CPU Socket Count'], name).toBe(0);
      expect(s['CPU Count'], name).toBe(2 * s['CPU Core Count']);
      expect(s.Psrinfo, name).toEqual({ smt_enabled: 'true' });
      expect(s['Bhyve Max Vcpus'], name).toBeLessThanOrEqual(s['CPU Count']);
    }
  });

  it('completes an older sysinfo.json when it is read, keeping every key and value it has', () => {
    const { uuid, sysinfo } = make();
    // A CN as the original mockcloud (or an older mockcloud) wrote it: the original keys only,
    // "SDC Agents" empty, plus a key of someone's own.
    const old: Record<string, unknown> = {};
    for (const k of ORIGINAL_KEYS) old[k] = sysinfo[k];
    old['SDC Agents'] = [];
    old['CPU Total Cores'] = 24;
    old['Zpool Recovery'] = undefined;
    old['Local Note'] = 'kept';
    const read = parseSysinfo(JSON.stringify(old), 'old sysinfo.json', uuid);
    expect(Object.keys(read)).toEqual([...REAL_SYSINFO_KEYS, 'Local Note']);
    for (const k of ORIGINAL_KEYS) expect(read[k], k).toEqual(old[k]);
    expect(read['Local Note']).toBe('kept');
    expect(read).toMatchObject({
      'HVM API': true,
      'Admin NIC Tag': 'admin',
      'CPU Socket Count': 2,
      'CPU Count': 24,
      'CPU Online Count': 24,
      'CPU Core Count': 12,
      'Zpool Encrypted': false,
      'Zpool Recovery': {},
      Psrinfo: { smt_enabled: 'true' },
    });
    // A complete one comes back as it is.
    expect(parseSysinfo(JSON.stringify(sysinfo), 'new sysinfo.json', uuid)).toEqual(sysinfo);
  });
});
