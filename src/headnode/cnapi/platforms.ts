/**
 * The platform images of the dev DC (sdc-cnapi lib/models/platform.js): a real CNAPI lists
 * the headnode's /usbkey/os through Ur and marks the newest `YYYYMMDDTHHMMSSZ` stamp `latest`.
 * The dev headnode's "usbkey" holds every platform a server of the DC runs or is set to boot,
 * and every dir of `<data-dir>/headnode/usbkey/os/` (a platform "installed" there, as
 * `sdcadm platform install` unpacks one), all SmartOS. Like the real one, it needs the DC's
 * headnode server.
 */
import { readdirSync } from 'node:fs';
import { MockcloudError } from '../../common/errors.js';
import type { CnapiContext } from './context.js';

export interface PlatformEntry {
  latest?: true;
  os?: string;
}

const STAMP_RE = /\d{8}T\d{6}Z/;

/** The platform dirs of the dev usbkey (none when there is no such dir). */
function installedPlatforms(dir: string | undefined): string[] {
  if (!dir) return [];
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && /^[A-Za-z0-9._-]+$/.test(e.name))
      .map((e) => e.name);
  } catch {
    return [];
  }
}

export function listPlatforms(ctx: Pick<CnapiContext, 'servers' | 'usbkeyOsDir'>, opts: { os?: boolean } = {}): Record<string, PlatformEntry> {
  const records = ctx.servers.list();
  if (!records.some((r) => r.uuid !== 'default' && r.headnode === true)) {
    throw new MockcloudError('InternalError', 'Error finding headnode: Could not find headnode');
  }
  const names = new Set<string>(installedPlatforms(ctx.usbkeyOsDir));
  for (const r of records) {
    for (const p of [r.current_platform, r.boot_platform]) {
      if (typeof p === 'string' && p && p !== 'latest') names.add(p);
    }
  }
  const out: Record<string, PlatformEntry> = {};
  for (const name of [...names].sort()) out[name] = opts.os ? { os: 'smartos' } : {};
  const latest = Object.keys(out)
    .filter((p) => STAMP_RE.test(p))
    .sort()
    .pop();
  if (latest) out[latest]!.latest = true;
  return out;
}
