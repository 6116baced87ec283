/**
 * What a booting CN loads after its lease, as iPXE does: the boot file the ACK named, from
 * booter's HTTP root (sdc-booter's zone serves its TFTP root over HTTP: `boot.ipxe.01<MAC>`, the
 * script whose `kernel` line names the platform and carries `-B` the kernel args), or, where no
 * booter HTTP is configured, the boot params CNAPI holds for the server (`GET /boot/<uuid>`).
 *
 * Only the configured booter HTTP URL and CNAPI are ever asked: never the `${next-server}` an
 * answer names.
 */
import type { JsonHttpClient } from '../common/http-client.js';

/** The platform and kernel args a CN boots with, and where they came from. */
export interface BootFile {
  platform: string;
  /** `key=value` of `-B`, values as the kernel sees them (strings). */
  kernelArgs: Record<string, string>;
  source: 'booter-http' | 'cnapi';
}

export class BootFileError extends Error {
  override readonly name = 'BootFileError';
}

/**
 * The platform and kernel args of an iPXE script as booter writes it (sdc-booter
 * lib/menulst.js buildIpxeCfg): `kernel <proto>://${next-server}/os/<platform>/platform/
 * i86pc/kernel/amd64/unix [flags] -B k=v,k=v,...`. Undefined when the script has no such line.
 */
export function parseIpxeScript(text: string): { platform: string; kernelArgs: Record<string, string> } | undefined {
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith('kernel ')) continue;
    const platform = /\/os\/([^/\s]+)\/platform\//.exec(line)?.[1];
    if (!platform) return undefined;
    const b = line.indexOf(' -B ');
    return { platform, kernelArgs: b < 0 ? {} : parseBootArgs(line.slice(b + 4).trim()) };
  }
  return undefined;
}

/** `a=1,b="x,y",c` as the kernel reads `-B`: commas split, not inside double quotes. */
export function parseBootArgs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  let item = '';
  let quoted = false;
  const take = (): void => {
    const s = item.trim();
    item = '';
    if (s === '') return;
    const eq = s.indexOf('=');
    if (eq < 0) out[s] = '';
    else out[s.slice(0, eq)] = s.slice(eq + 1);
  };
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    if (ch === ',' && !quoted) take();
    else item += ch;
  }
  take();
  return out;
}

/** CNAPI's boot params as the kernel would get them: the kernel args, then the console. */
export function fromCnapiBootParams(body: unknown): { platform: string; kernelArgs: Record<string, string> } | undefined {
  const b = body as { platform?: unknown; kernel_args?: unknown; default_console?: unknown; serial?: unknown } | undefined;
  if (!b || typeof b.platform !== 'string' || b.platform === '') return undefined;
  const kernelArgs: Record<string, string> = {};
  if (b.kernel_args && typeof b.kernel_args === 'object') {
    for (const [k, v] of Object.entries(b.kernel_args as Record<string, unknown>)) kernelArgs[k] = String(v);
  }
  const serial = typeof b.serial === 'string' ? b.serial : 'ttyb';
  const console = b.default_console === 'serial' && serial !== 'none' ? serial : 'text';
  kernelArgs.console = console;
  kernelArgs[`${console}-mode`] = '"115200,8,n,1,-"';
  return { platform: b.platform, kernelArgs };
}

export interface FetchBootFileOptions {
  http: JsonHttpClient;
  /** Booter's HTTP root; absent: CNAPI is asked. */
  booterHttpUrl?: string;
  cnapiUrl?: string;
  timeoutMs: number;
}

export async function fetchBootFile(o: FetchBootFileOptions, serverUuid: string, file: string | undefined): Promise<BootFile> {
  if (o.booterHttpUrl && file && /^[A-Za-z0-9._-]+$/.test(file)) {
    const url = `${o.booterHttpUrl.replace(/\/+$/, '')}/${file}`;
    const res = await o.http.request<unknown>({ method: 'GET', url, timeoutMs: o.timeoutMs });
    if (res.statusCode !== 200 || typeof res.body !== 'string') throw new BootFileError(`GET ${url}: ${res.statusCode}`);
    const parsed = parseIpxeScript(res.body);
    if (!parsed) throw new BootFileError(`GET ${url}: no kernel line naming a platform`);
    return { ...parsed, source: 'booter-http' };
  }
  if (!o.cnapiUrl) throw new BootFileError('neither booter HTTP nor CNAPI to load the boot params from');
  let url = `${o.cnapiUrl}/boot/${serverUuid}`;
  let res = await o.http.request<unknown>({ method: 'GET', url, timeoutMs: o.timeoutMs });
  // A server CNAPI does not know yet (its first boot) boots the default params, as booter gives it.
  if (res.statusCode === 404) {
    url = `${o.cnapiUrl}/boot/default`;
    res = await o.http.request<unknown>({ method: 'GET', url, timeoutMs: o.timeoutMs });
  }
  const parsed = res.statusCode === 200 ? fromCnapiBootParams(res.body) : undefined;
  if (!parsed) throw new BootFileError(`GET ${url}: ${res.statusCode}${res.statusCode === 200 ? ' without a platform' : ''}`);
  return { ...parsed, source: 'cnapi' };
}
