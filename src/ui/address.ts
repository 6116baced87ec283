/** `--ui-address`: where the fleet page listens. */
import net from 'node:net';

export interface UiAddress {
  ip: string;
  port: number;
}

/** 127.0.0.1 with any free port: only this host sees the page. */
export const DEFAULT_UI_ADDRESS: UiAddress = { ip: '127.0.0.1', port: 0 };

/**
 * `IP`, `IP:PORT`, `[IPv6]:PORT`, or `none` (no page): an address or a message saying what is
 * wrong with the text.
 */
export function parseUiAddress(text: string): UiAddress | null | string {
  const t = text.trim();
  if (t === 'none' || t === 'off') return null;
  let ip = t;
  let portText: string | undefined;
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
  if (v6) {
    ip = v6[1]!;
    portText = v6[2];
  } else if (net.isIP(t) === 0 && t.includes(':') && t.indexOf(':') === t.lastIndexOf(':')) {
    ip = t.slice(0, t.indexOf(':'));
    portText = t.slice(t.indexOf(':') + 1);
  }
  if (net.isIP(ip) === 0) return `${JSON.stringify(text)} is not IP[:PORT] (e.g. 127.0.0.1:8090, 0.0.0.0:8090, [::1]:8090) or none`;
  let port = 0;
  if (portText !== undefined) {
    if (!/^\d+$/.test(portText) || Number(portText) > 65535) return `${JSON.stringify(text)}: the port must be 0-65535`;
    port = Number(portText);
  }
  return { ip, port };
}

/** Whether only this host can reach an address. */
export function isLoopback(ip: string): boolean {
  return /^127\./.test(ip) || ip === '::1';
}

/** A URL for an address (a wildcard is shown as this host's loopback). */
export function urlOf(ip: string, port: number): string {
  const shown = ip === '0.0.0.0' ? '127.0.0.1' : ip === '::' ? '::1' : ip;
  return `http://${net.isIPv6(shown) ? `[${shown}]` : shown}:${port}/`;
}
