/**
 * Ports for a test that must name its ports (--headnode-ports, a configured headnode, a
 * Prometheus config): free when picked and outside the kernel's ephemeral range. Every port-0
 * listener and every outgoing connection of the tests running beside this one draws from that
 * range, so a port taken there and let go is soon someone's source port or listener, and the
 * test's own listen fails with EADDRINUSE: the race the suite hit under load.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** The lowest port the kernel hands out by itself (Linux's default range when unreadable). */
function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && low > 2048) return low;
  } catch {
    // Not Linux: its default range still starts above the ports picked below.
  }
  return 32768;
}

function tryListen(port: number, host: string): Promise<net.Server | undefined> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(undefined));
    s.listen({ port, host, exclusive: true }, () => resolve(s));
  });
}

/** `n` distinct ports free on `host` now, below the ephemeral range, from a random start. */
export async function pinnablePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const high = ephemeralLow() - 1;
  // Above the ports services commonly take (a database, a dev server started meanwhile).
  const low = Math.min(10_000, high - 1000);
  const span = high - low + 1;
  const start = low + Math.floor(Math.random() * span);
  const held: net.Server[] = [];
  try {
    for (let i = 0; i < span && held.length < n; i++) {
      const s = await tryListen(low + ((start - low + i) % span), host);
      if (s) held.push(s);
    }
    if (held.length < n) throw new Error(`no ${n} free ports on ${host} between ${low} and ${high}`);
    return held.map((s) => (s.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
}
