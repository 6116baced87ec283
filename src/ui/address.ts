/** `--ui-address`: where the fleet page listens. */
import { parseListenAddress, type ListenAddress } from '../common/listen-address.js';

export type UiAddress = ListenAddress;

/** 127.0.0.1 with any free port: only this host sees the page. */
export const DEFAULT_UI_ADDRESS: UiAddress = { ip: '127.0.0.1', port: 0 };

/** An address (any free port when none is given), `none` (no page), or what is wrong with the text. */
export function parseUiAddress(text: string): UiAddress | null | string {
  const t = text.trim();
  if (t === 'none' || t === 'off') return null;
  const a = parseListenAddress(t, 0);
  return typeof a === 'string' ? `${a}, or none` : a;
}
