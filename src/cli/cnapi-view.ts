/**
 * What the CLI reads from CNAPI itself (as an operator would with sdc-cnapi): where CNAPI is,
 * and its view of the servers. The CLI talks to CNAPI directly, not through the daemon, so
 * list-servers shows what CNAPI really says.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { DaemonJson } from '../daemon/daemon-json.js';

/** The dev headnode's address file (src/headnode/headnode.ts HEADNODE_JSON; not imported: that loads restify). */
const HEADNODE_JSON = 'headnode.json';
const PAGE = 1000;
/** CNAPI's ServerList allows up to 1000 per page; more than this many servers is not a mock fleet. */
const MAX_PAGES = 100;

/**
 * CNAPI's address: a running daemon's (daemon.json), else --cnapi-url / MOCKCLOUD_CNAPI_URL,
 * else a dev headnode of the same data dir (headnode.json).
 */
export async function cnapiUrlFor(
  dataDir: string,
  daemon: DaemonJson | undefined,
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const given = daemon?.urls.cnapi ?? (flag || env.MOCKCLOUD_CNAPI_URL || undefined);
  if (given) return given.replace(/\/+$/, '');
  try {
    const hn = JSON.parse(await fsp.readFile(path.join(dataDir, HEADNODE_JSON), 'utf8')) as { cnapi?: unknown };
    return typeof hn.cnapi === 'string' ? hn.cnapi : undefined;
  } catch {
    return undefined;
  }
}

export interface CnapiServer {
  uuid: string;
  hostname?: string;
  status?: string;
  setup?: boolean;
  headnode?: boolean;
  created?: string;
  vms?: Record<string, unknown>;
  sysinfo?: Record<string, unknown>;
}

/** Every server CNAPI lists (paged), or throws with the reason. */
export async function cnapiServers(cnapi: string, opts: { sysinfo?: boolean; vms?: boolean; timeoutMs?: number } = {}): Promise<CnapiServer[]> {
  const out: CnapiServer[] = [];
  const extras = [opts.sysinfo ? 'sysinfo' : '', opts.vms ? 'vms' : ''].filter(Boolean).join(',');
  for (let page = 0; page < MAX_PAGES; page++) {
    const q = `limit=${PAGE}&offset=${page * PAGE}${extras ? `&extras=${extras}` : ''}`;
    const res = await fetch(`${cnapi}/servers?${q}`, { signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000) });
    if (!res.ok) throw new Error(`CNAPI GET /servers: HTTP ${res.status}`);
    const body = (await res.json()) as unknown;
    if (!Array.isArray(body)) throw new Error('CNAPI GET /servers did not answer a list');
    out.push(...(body as CnapiServer[]));
    if (body.length < PAGE) break;
  }
  return out;
}

/** uuid → CNAPI status, or undefined when CNAPI cannot be asked (the listing then shows "-"). */
export async function cnapiStatuses(cnapi: string | undefined): Promise<Map<string, string> | undefined> {
  if (!cnapi) return undefined;
  try {
    const list = await cnapiServers(cnapi, { timeoutMs: 5000 });
    return new Map(list.map((s) => [s.uuid, String(s.status ?? '-')]));
  } catch {
    return undefined;
  }
}
