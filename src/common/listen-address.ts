/**
 * Addresses the daemon's own listeners take (`--metrics-address`, `--ui-address`), and the
 * loopback checks its loopback-only listeners make on a request's Host.
 */
import net from 'node:net';

/** An address to listen on: an IP and a port (0: any free one). */
export interface ListenAddress {
  ip: string;
  port: number;
}

/**
 * `IP`, `IP:PORT`, `[IPv6]:PORT` or a bare IPv6 address (which takes `defaultPort`): the
 * address, or what is wrong with the text.
 */
export function parseListenAddress(text: string, defaultPort: number): ListenAddress | string {
  const t = text.trim();
  const m = /^\[([^\]]+)\](?::(\d*))?$/.exec(t) ?? (net.isIPv6(t) ? [t, t, undefined] : /^([^:]+)(?::([^:]*))?$/.exec(t));
  const ip = m?.[1];
  if (!ip || net.isIP(ip) === 0) return `${JSON.stringify(text)} is not IP[:PORT] (e.g. 127.0.0.1:8090, 0.0.0.0:8090, [::1]:8090)`;
  if (m[2] === undefined) return { ip, port: defaultPort };
  if (!/^\d+$/.test(m[2]) || Number(m[2]) > 65535) return `${JSON.stringify(text)}: the port must be 0-65535`;
  return { ip, port: Number(m[2]) };
}

/** Whether only this host can reach an address. */
export function isLoopbackIp(ip: string): boolean {
  return /^127\./.test(ip) || ip === '::1';
}

/** Whether a request's Host header names this host's loopback (a browser page elsewhere cannot rebind to it). */
export function isLoopbackHost(host: string): boolean {
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/** A URL of a listener (a wildcard address shown as this host's loopback, which reaches it). */
export function listenerUrl(ip: string, port: number, path = '/'): string {
  const shown = ip === '0.0.0.0' ? '127.0.0.1' : ip === '::' ? '::1' : ip;
  return `http://${net.isIPv6(shown) ? `[${shown}]` : shown}:${port}${path}`;
}
