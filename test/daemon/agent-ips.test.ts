/** Per-CN loopback agent IPs: the address range, persistence, and the settings that pick the mode. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createQuietLogger } from '../../src/common/log.js';
import { newUuid } from '../../src/common/uuid.js';
import { AGENT_IPS_FILE, LoopbackAgentIps, loopbackAddress, MAX_AGENT_IPS } from '../../src/daemon/agent-ips.js';
import { DEFAULT_CMON_PORT, resolveConfig } from '../../src/daemon/config.js';
import { noMdata } from '../../src/daemon/mdata.js';

const log = createQuietLogger('agent-ips-test');

describe('loopback agent IPs', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-agent-ips-'));
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('hands out distinct 127/8 addresses, never 127.0.0.1 nor a .0 / .255 host part', () => {
    const seen = new Set<string>();
    // Across the first third-octet and second-octet boundaries, and the last address.
    const ns = [...Array.from({ length: 600 }, (_, i) => i), 254 * 256 - 1, 254 * 256, MAX_AGENT_IPS - 1];
    for (const n of ns) {
      const ip = loopbackAddress(n);
      const octets = ip.split('.').map(Number);
      expect(octets[0]).toBe(127);
      expect(octets.every((o) => Number.isInteger(o) && o >= 0 && o <= 255)).toBe(true);
      expect(ip).not.toBe('127.0.0.1');
      expect(octets[3]).not.toBe(0);
      expect(octets[3]).not.toBe(255);
      expect(seen.has(ip)).toBe(false);
      seen.add(ip);
    }
    expect(() => loopbackAddress(MAX_AGENT_IPS)).toThrow(/range/);
  });

  it('keeps each CN\'s address across instances (restarts) and never reuses a released one', async () => {
    const [a, b, c] = [newUuid(), newUuid(), newUuid()];
    const first = new LoopbackAgentIps(dir, log);
    await first.load();
    const ipA = await first.addressFor(a);
    const ipB = await first.addressFor(b);
    expect(ipA).not.toBe(ipB);
    expect(await first.addressFor(a)).toBe(ipA);
    await first.release(b);

    const second = new LoopbackAgentIps(dir, log);
    await second.load();
    expect(await second.addressFor(a)).toBe(ipA);
    const ipC = await second.addressFor(c);
    expect([ipA, ipB]).not.toContain(ipC);
    const onDisk = JSON.parse(await fsp.readFile(path.join(dir, AGENT_IPS_FILE), 'utf8')) as { servers: Record<string, string> };
    expect(onDisk.servers).toEqual({ [a]: ipA, [c]: ipC });
  });

  it('refuses a damaged state file instead of silently renumbering every CN', async () => {
    await fsp.writeFile(path.join(dir, AGENT_IPS_FILE), '{"next": "x"');
    await expect(new LoopbackAgentIps(dir, log).load()).rejects.toThrow(/not valid JSON/);
    await fsp.writeFile(path.join(dir, AGENT_IPS_FILE), '{"next": -1, "servers": {}}');
    await expect(new LoopbackAgentIps(dir, log).load()).rejects.toThrow(/must hold/);
  });

  it('settings: --cmon-port defaults to 9163, 0 is allowed; --agent-ips is shared or loopback', async () => {
    const d = await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata });
    expect(d.cmonPort).toBe(DEFAULT_CMON_PORT);
    expect(d.agentIps).toBe('shared');
    // Loopback mode needs Linux (elsewhere it is refused: only 127.0.0.1 is local there).
    const mode = process.platform === 'linux' ? 'loopback' : 'shared';
    const e = await resolveConfig({ flags: { dataDir: dir }, env: { MOCKCLOUD_CMON_PORT: '0', MOCKCLOUD_AGENT_IPS: mode }, mdata: noMdata });
    expect(e.cmonPort).toBe(0);
    expect(e.agentIps).toBe(mode);
    expect(e.sources).toMatchObject({ cmonPort: 'env', agentIps: 'env' });
    await fsp.writeFile(path.join(dir, 'config.json'), JSON.stringify({ cmonPort: 19163 }));
    expect((await resolveConfig({ flags: { dataDir: dir }, env: {}, mdata: noMdata })).cmonPort).toBe(19163);
    await expect(resolveConfig({ flags: { dataDir: dir, cmonPort: '70000' }, env: {}, mdata: noMdata })).rejects.toThrow(/--cmon-port/);
    await expect(resolveConfig({ flags: { dataDir: dir, agentIps: 'per-cn' }, env: {}, mdata: noMdata })).rejects.toThrow(/shared, loopback/);
  });
});
