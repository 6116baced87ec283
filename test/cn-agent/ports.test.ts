import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseReservedPorts, PortAllocator, readEphemeralPorts } from '../../src/agents/cn-agent/listeners.js';

const IP = '127.0.0.1';
const open: net.Server[] = [];

function server(): net.Server {
  const s = net.createServer();
  open.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))));
});

/** A block of ports outside the OS's ephemeral range and other tests' blocks. */
function block(size: number): [number, number] {
  const lo = 12000 + Math.floor(Math.random() * 8000);
  return [lo, lo + size - 1];
}

describe('PortAllocator without a configured range', () => {
  it('hands out ports of the ephemeral range it is given, in order, skipping reserved and taken ones', async () => {
    const [lo, hi] = block(6);
    const taken = server();
    await new Promise<void>((resolve) => taken.listen(lo + 2, IP, resolve));
    const ports = new PortAllocator(undefined, { range: [lo, hi], reserved: (p) => p === lo + 1 });
    const got: number[] = [];
    for (let i = 0; i < 4; i++) got.push(await ports.bind(server(), IP));
    expect(new Set(got).size).toBe(4);
    for (const p of got) {
      expect(p).toBeGreaterThanOrEqual(lo);
      expect(p).toBeLessThanOrEqual(hi);
      expect([lo + 1, lo + 2]).not.toContain(p);
    }
  });

  it('falls back to an OS-chosen port when the whole range is taken', async () => {
    const [lo] = block(1);
    const ports = new PortAllocator(undefined, { range: [lo, lo], reserved: () => false });
    const first = await ports.bind(server(), IP);
    expect(first).toBe(lo);
    const second = await ports.bind(server(), IP);
    expect(second).not.toBe(lo);
    expect(second).toBeGreaterThan(0);
  });

  it('with null binds port 0 (the OS picks)', async () => {
    const ports = new PortAllocator(undefined, null);
    const p = await ports.bind(server(), IP);
    expect(p).toBeGreaterThan(0);
  });

  it('reads this machine\'s ephemeral range', () => {
    const eph = readEphemeralPorts();
    if (process.platform !== 'linux') return expect(eph).toBeUndefined();
    expect(eph).toBeDefined();
    const [lo, hi] = eph!.range;
    expect(lo).toBeGreaterThan(0);
    expect(hi).toBeGreaterThanOrEqual(lo);
  });
});

describe('PortAllocator with a configured range', () => {
  it('refuses with a clear error when the range is full, and reuses a released port', async () => {
    const [lo, hi] = block(2);
    const ports = new PortAllocator([lo, hi]);
    const a = server();
    expect(await ports.bind(a, IP)).toBe(lo);
    expect(await ports.bind(server(), IP)).toBe(hi);
    await expect(ports.bind(server(), IP)).rejects.toThrow(`no free port in ${lo}-${hi}`);
    await new Promise<void>((resolve) => a.close(() => resolve()));
    ports.release(IP, lo);
    expect(await ports.bind(server(), IP)).toBe(lo);
  });
});

describe('parseReservedPorts', () => {
  it('reads single ports and ranges and skips junk', () => {
    expect(parseReservedPorts('8000,9000-9010, x, 7\n')).toEqual([
      [8000, 8000],
      [9000, 9010],
      [7, 7],
    ]);
    expect(parseReservedPorts('\n')).toEqual([]);
  });
});
