/**
 * What the dev booter hands a booting CN, found as sdc-booter finds it (lib/bootparams.js
 * getBootParams, lib/clients.js, lib/admin-pool-cache.js), over HTTP to NAPI and CNAPI:
 *
 *   1. the `admin` network pool (cached for a minute, as booter's pool cache);
 *   2. the NIC of the booting MAC in NAPI; none: one is provisioned on the admin network, or
 *      on the admin pool when the relay's circuit id names a NIC tag the pool has
 *      (`admin_rack_<circuit id>`); a NIC without an IP gets one;
 *   3. the server it belongs to: its `belongs_to_uuid`, or, for a NIC still owned by the admin
 *      user (a CN not yet set up), the server CNAPI lists with the MAC (dashes) as hostname;
 *   4. its boot params from CNAPI (`GET /boot/<uuid>`; `GET /boot/default` for a new CN);
 *   5. the server's other NICs and aggregations from NAPI (not for a new CN), and CNAPI's
 *      platforms (booter's NIC tag reads, for a networking file the dev booter does not write,
 *      are left out);
 *   6. the kernel args: `<tag>_nic=<mac>` for every NIC tag of its NICs (CNAPI's kernel args
 *      win), `<aggr>_aggr` for aggregations, and `admin_nic=<boot MAC>` when no NIC is on the
 *      admin tag (the first boot).
 */
import type { JsonHttpClient } from '../../common/http-client.js';

type Obj = Record<string, unknown>;

const ADMIN_RACK_RE = /^ADMIN_RACK_[A-Z0-9_-]+$/;
/** sdc-booter's pool cache refreshes every 60 s (config poolCache.updateIntervalSeconds). */
const POOL_CACHE_MS = 60_000;
const PLATFORMS_CACHE_MS = 5_000;

/** What a DHCP answer and the boot file are made from (sdc-booter's cached `params`). */
export interface BootParams {
  ip: string;
  netmask: string;
  gateway?: string;
  resolvers?: string[];
  routes?: Record<string, string>;
  platform: string;
  kernel_args: Record<string, unknown>;
  kernel_flags?: Record<string, unknown>;
  boot_modules?: unknown[];
  default_console?: string;
  serial?: string;
}

export interface BootParamsContext {
  http: JsonHttpClient;
  napiUrl: string;
  cnapiUrl: string;
  adminUuid: string;
}

/** A Triton API answered something else than booter can use: no answer goes to the CN. */
export class BootParamsError extends Error {
  override readonly name = 'BootParamsError';
}

/** The `admin_rack_` NIC tag a relay's circuit id stands for (sdc-booter lib/dhcpd.js). */
export function nicTagOfCircuit(circuitId: string | undefined): string | undefined {
  if (!circuitId) return undefined;
  return ADMIN_RACK_RE.test(circuitId.toUpperCase()) ? circuitId : `admin_rack_${circuitId}`;
}

export class BootParamsSource {
  private pool: { value: Obj | undefined; at: number } | undefined;
  private platformsAt: number | undefined;

  constructor(private readonly c: BootParamsContext) {}

  async forMac(mac: string, nicTag: string | undefined): Promise<BootParams> {
    const adminPool = await this.adminPool();
    let bootNic = await this.getNic(mac);
    let networkUuid = 'admin';
    let tag = nicTag;
    if (!bootNic || !bootNic.ip) {
      if (!tag) tag = 'admin';
      else if (poolHasTag(adminPool, tag)) networkUuid = String(adminPool!.uuid);
    }
    if (bootNic && !bootNic.ip) {
      bootNic = await this.napi<Obj>('PUT', `/nics/${macPath(mac)}`, { network_uuid: networkUuid, nic_tag: tag });
    }
    if (!bootNic) {
      bootNic = await this.napi<Obj>('POST', `/networks/${networkUuid}/nics`, {
        owner_uuid: this.c.adminUuid,
        belongs_to_uuid: this.c.adminUuid,
        belongs_to_type: 'other',
        mac,
        nic_tags_provided: [tag],
        nic_tag: tag,
      });
    }
    let cnUuid = String(bootNic.belongs_to_uuid ?? '');
    if (cnUuid === this.c.adminUuid) {
      const servers = await this.cnapi<Obj[]>('GET', `/servers?hostname=${encodeURIComponent(mac.replace(/:/g, '-'))}`);
      if (Array.isArray(servers) && servers.length > 0 && typeof servers[0]!.uuid === 'string') cnUuid = servers[0]!.uuid;
    }
    const justBooted = cnUuid === this.c.adminUuid;
    let params = justBooted ? undefined : await this.serverBootParams(cnUuid);
    params ??= await this.cnapi<Obj>('GET', '/boot/default');

    const nics: Obj[] = [bootNic];
    let aggrs: Obj[] = [];
    if (!justBooted) {
      const owned = await this.napi<Obj[]>('GET', `/nics?belongs_to_uuid=${encodeURIComponent(cnUuid)}`);
      const seen = new Set(nics.map((n) => n.mac));
      for (const n of Array.isArray(owned) ? owned : []) if (!seen.has(n.mac)) (seen.add(n.mac), nics.push(n));
      const listed = await this.napi<Obj[]>('GET', `/aggregations?belongs_to_uuid=${encodeURIComponent(cnUuid)}`);
      aggrs = Array.isArray(listed) ? listed : [];
    }
    // Booter reads the NIC tags for its boot-time networking file, which the dev booter does not
    // write; it reads the platforms for the OS of the boot file: a failure is a failure of the
    // whole answer, as there (read at most every few seconds: a storm asks thousands of times).
    await this.platforms();

    if (typeof bootNic.ip !== 'string' || typeof bootNic.netmask !== 'string') {
      throw new BootParamsError(`the boot NIC ${mac} has no IP or netmask in NAPI`);
    }
    if (typeof params.platform !== 'string' || params.platform === '') {
      throw new BootParamsError(`CNAPI gave server ${cnUuid} no platform to boot`);
    }
    return composeParams(params, bootNic, nics, aggrs, adminPool);
  }

  /** `GET /boot/<uuid>`; undefined (the default params then) for a 404 or an empty answer. */
  private async serverBootParams(uuid: string): Promise<Obj | undefined> {
    const res = await this.c.http.request<Obj>({ method: 'GET', url: `${this.c.cnapiUrl}/boot/${encodeURIComponent(uuid)}` });
    if (res.statusCode === 404) return undefined;
    if (res.statusCode !== 200) throw apiError('CNAPI', `GET /boot/${uuid}`, res);
    return res.body && typeof res.body === 'object' && Object.keys(res.body).length > 0 ? res.body : undefined;
  }

  private async platforms(): Promise<void> {
    const now = Date.now();
    if (this.platformsAt !== undefined && now - this.platformsAt < PLATFORMS_CACHE_MS) return;
    await this.cnapi('GET', '/platforms?os=true');
    this.platformsAt = now;
  }

  private async adminPool(): Promise<Obj | undefined> {
    const now = Date.now();
    if (this.pool && now - this.pool.at < POOL_CACHE_MS) return this.pool.value;
    try {
      const pools = await this.napi<Obj[]>('GET', '/network_pools?name=admin');
      // None, or more than one (booter keeps its old cache then): no pool.
      this.pool = { value: Array.isArray(pools) && pools.length === 1 ? pools[0] : undefined, at: now };
    } catch {
      // Booter logs and boots without the pool.
      this.pool = { value: this.pool?.value, at: now };
    }
    return this.pool.value;
  }

  private async getNic(mac: string): Promise<Obj | undefined> {
    const res = await this.c.http.request<Obj>({ method: 'GET', url: `${this.c.napiUrl}/nics/${macPath(mac)}` });
    if (res.statusCode === 404) return undefined;
    if (res.statusCode !== 200) throw apiError('NAPI', `GET /nics/${macPath(mac)}`, res);
    return res.body;
  }

  private async napi<T = unknown>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<T> {
    return this.call('NAPI', this.c.napiUrl, method, path, body);
  }

  private async cnapi<T = unknown>(method: 'GET', path: string): Promise<T> {
    return this.call('CNAPI', this.c.cnapiUrl, method, path);
  }

  private async call<T>(api: string, base: string, method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<T> {
    const res = await this.c.http.request<T>({ method, url: `${base}${path}`, ...(body === undefined ? {} : { body }) });
    if (res.statusCode < 200 || res.statusCode >= 300) throw apiError(api, `${method} ${path}`, res);
    return res.body;
  }
}

function apiError(api: string, what: string, res: { statusCode: number; body: unknown }): BootParamsError {
  const b = res.body as { code?: string; message?: string } | undefined;
  return new BootParamsError(`${api} ${what}: ${res.statusCode}${b?.code ? ` ${b.code}` : ''}${b?.message ? `: ${b.message}` : ''}`);
}

function macPath(mac: string): string {
  return mac.replace(/:/g, '');
}

function poolHasTag(pool: Obj | undefined, tag: string): boolean {
  return Array.isArray(pool?.nic_tags_present) && (pool!.nic_tags_present as unknown[]).includes(tag);
}

function composeParams(cnapiParams: Obj, bootNic: Obj, nics: Obj[], aggrs: Obj[], adminPool: Obj | undefined): BootParams {
  const kernelArgs: Obj = { ...((cnapiParams.kernel_args ?? {}) as Obj) };
  const fromCnapi = new Set(Object.keys(kernelArgs));
  const aggrOf = new Map<string, string>();
  for (const ag of aggrs) for (const m of Array.isArray(ag.macs) ? ag.macs : []) aggrOf.set(String(m), String(ag.name));
  let adminFound = false;
  const seen = new Set<string>();
  for (const nic of nics) {
    if (typeof nic.mac !== 'string' || !Array.isArray(nic.nic_tags_provided) || seen.has(nic.mac)) continue;
    for (const t of nic.nic_tags_provided as string[]) {
      const key = `${t}_nic`;
      if (!fromCnapi.has(key) && !aggrOf.has(nic.mac)) kernelArgs[key] = nic.mac;
      if (key === 'admin_nic' || poolHasTag(adminPool, t)) adminFound = true;
    }
    seen.add(nic.mac);
  }
  for (const ag of aggrs) {
    for (const t of Array.isArray(ag.nic_tags_provided) ? (ag.nic_tags_provided as string[]) : []) {
      if (!(`${t}_nic` in kernelArgs)) kernelArgs[`${t}_nic`] = ag.name;
      if (poolHasTag(adminPool, t)) adminFound = true;
    }
  }
  for (const ag of aggrs) {
    kernelArgs[`${String(ag.name)}_aggr`] = `"${(Array.isArray(ag.macs) ? ag.macs : []).join(',')}"`;
    if (ag.lacp_mode !== undefined) kernelArgs[`${String(ag.name)}_lacp_mode`] = ag.lacp_mode;
  }
  if (!adminFound && !('admin_nic' in kernelArgs)) kernelArgs.admin_nic = bootNic.mac;
  const out: BootParams = {
    ip: String(bootNic.ip),
    netmask: String(bootNic.netmask),
    platform: String(cnapiParams.platform),
    kernel_args: kernelArgs,
  };
  if (Array.isArray(bootNic.resolvers)) out.resolvers = bootNic.resolvers as string[];
  if (typeof bootNic.gateway === 'string') out.gateway = bootNic.gateway;
  if (bootNic.routes && typeof bootNic.routes === 'object') out.routes = bootNic.routes as Record<string, string>;
  if (cnapiParams.kernel_flags && typeof cnapiParams.kernel_flags === 'object') out.kernel_flags = cnapiParams.kernel_flags as Obj;
  if (Array.isArray(cnapiParams.boot_modules)) out.boot_modules = cnapiParams.boot_modules;
  if (typeof cnapiParams.default_console === 'string') out.default_console = cnapiParams.default_console;
  if (typeof cnapiParams.serial === 'string') out.serial = cnapiParams.serial;
  return out;
}
