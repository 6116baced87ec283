/**
 * How long a mock CN's boot waits, and for what. The DHCP schedule is PXE's (the PXE spec's
 * DHCPDISCOVER retransmissions; sdc-booter lib/bootparams.js: "the longest our iPXE will wait
 * for a DHCPDISCOVER is 32 seconds"): a packet goes again when no answer came within 4, 8, 16
 * and 32 s, then the round has failed and the firmware starts over (a new transaction) after a
 * backoff. Tests scale it down with the config file's `bootTimings`.
 *
 * How long the kernel takes from the boot file to the agents is the timing model's (issue 26);
 * until it lands, `kernelMs` (the daemon's) says it per cause: see BootService.
 */
import { MockcloudError } from '../common/errors.js';

export interface BootTimings {
  /** After each of these with no answer a DHCP packet is sent again; after the last the round failed. */
  dhcpTimeoutsMs: number[];
  /** The wait before the first new round after a failed one; doubling up to `retryMaxMs`. */
  retryMinMs: number;
  retryMaxMs: number;
  /** The boot file (booter's HTTP) or the boot params (CNAPI) must come within this. */
  fetchTimeoutMs: number;
}

export const PXE_TIMINGS: BootTimings = {
  dhcpTimeoutsMs: [4000, 8000, 16000, 32000],
  retryMinMs: 10_000,
  retryMaxMs: 120_000,
  fetchTimeoutMs: 30_000,
};

const KEYS = ['dhcpTimeoutsMs', 'retryMinMs', 'retryMaxMs', 'fetchTimeoutMs'] as const;

/** The config file's `bootTimings` (external input): only known keys, positive numbers. */
export function validateBootTimings(value: unknown): Partial<BootTimings> {
  const bad = (msg: string): MockcloudError => new MockcloudError('InvalidArgument', `config "bootTimings${msg}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('" must be an object');
  const out: Partial<BootTimings> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!(KEYS as readonly string[]).includes(k)) throw bad(`.${k}" is unknown; known: ${KEYS.join(', ')}`);
    if (k === 'dhcpTimeoutsMs') {
      if (!Array.isArray(v) || v.length === 0 || v.length > 16 || !v.every((n) => typeof n === 'number' && n > 0 && n <= 600_000)) {
        throw bad('.dhcpTimeoutsMs" must be 1-16 numbers of ms, each > 0 and at most 600000');
      }
      out.dhcpTimeoutsMs = [...(v as number[])];
      continue;
    }
    if (typeof v !== 'number' || !(v > 0) || v > 3_600_000) throw bad(`.${k}" must be a number of ms > 0 and at most 3600000`);
    (out as Record<string, number>)[k] = v;
  }
  return out;
}

export function resolveBootTimings(over: Partial<BootTimings> | undefined): BootTimings {
  const t = { ...PXE_TIMINGS, ...(over ?? {}) };
  if (t.retryMaxMs < t.retryMinMs) t.retryMaxMs = t.retryMinMs;
  return t;
}
