/**
 * Creating and removing mock CNs while the daemon runs (the control API's POST/DELETE
 * /servers), as the original create-server / delete-server tools did (cn-agent-spec §6):
 *
 * create: fresh MACs for dnet0/dnet1 (each checked free in NAPI, regenerated on a clash), the
 *   admin NIC from NAPI `POST /networks/admin/nics` (belongs_to_type 'other', owned by the
 *   admin user), its IP as dnet0's ip4addr and "Admin IP", the server dir written durably with
 *   sysinfo and agents, then the CN starts at once. Bounded parallelism.
 * remove: the CN stops, its dir goes, VMAPI marks its VMs destroyed, NAPI releases its NICs and
 *   its VMs' NICs, CNAPI forgets it, SAPI its agent instances (best effort: warnings are
 *   reported, not fatal).
 *
 * Without a NAPI URL (standalone) the admin IP is the bind IP and nothing is allocated.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { JsonHttpClient } from '../common/http-client.js';
import type { Sysinfo } from '../common/sysinfo.js';
import { creatingDir, SYSINFO_FILE } from '../mockcn/layout.js';
import { MockcloudError, toMockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { newUuid } from '../common/uuid.js';
import { adminNicOf } from '../mockcn/sysinfo-file.js';
import { getProfile } from '../mockcn/profiles.js';
import { abortServerCreation, beginServerCreation, finishServerCreation, readCreateMarker, removeServerDir } from '../mockcn/server-dir.js';
import { buildSysinfo, isHeadnodeSysinfo, randomMockMac } from '../mockcn/sysinfo-template.js';
import { normalizeMac } from '../vmadm/nics.js';
import type { DaemonConfig } from './config.js';
import { mapLimit } from './concurrency.js';
import type { Fleet } from './fleet.js';
import type { MockCn } from '../mockcn/types.js';

export const MAX_CREATE_COUNT = 10_000;
export const HOSTNAME_PREFIX_RE = /^[A-Za-z][A-Za-z0-9-]{0,15}$/;

export interface CreateRequest {
  count: number;
  profile?: string;
  hostnamePrefix?: string;
  /** The dev DC's headnode server (never from the control API: see createHeadnode). */
  headnode?: boolean;
}

export interface CreatedServer {
  uuid: string;
  hostname: string;
  adminIp: string;
  profile: string;
  agentAddress?: { ip: string; port: number };
}

export interface CreateResult {
  created: CreatedServer[];
  errors: { code: string; message: string }[];
}

export interface RemoveResult {
  uuid: string;
  /** The VMs that went with it (destroyed in VMAPI, NICs released in NAPI); absent when none. */
  vms?: string[];
  warnings: string[];
}

export interface ServerFactoryOptions {
  config: DaemonConfig;
  fleet: Fleet;
  http: JsonHttpClient;
  log: Logger;
  concurrency?: number;
  countError: (kind: string) => void;
  /** After a CN's dir is gone (e.g. forget its loopback agent IP). */
  onRemoved?: (uuid: string) => Promise<void> | void;
  /** New CNs' dnet1 provides the `external` NIC tag (the dev DC's CNs). */
  externalNics?: boolean;
  /** Delete the CN's agent instances from SAPI (RFD 82); resolves with warnings. */
  releaseAgentInstances?: (cn: MockCn) => Promise<string[]>;
  /** The MAC draw; `randomMockMac` by default (tests force clashes with it). */
  randomMac?: () => string;
}

const MAC_ATTEMPTS = 5;

export class ServerFactory {
  private readonly o: ServerFactoryOptions;
  private readonly napi: string | undefined;
  private readonly cnapi: string | undefined;
  private readonly vmapi: string | undefined;
  private takenMacs: Set<string> | undefined;

  constructor(opts: ServerFactoryOptions) {
    this.o = opts;
    this.napi = opts.config.urls.napi;
    this.cnapi = opts.config.urls.cnapi;
    this.vmapi = opts.config.urls.vmapi;
  }

  /** Validate a create request from the control API (external input). */
  static validate(body: unknown): CreateRequest {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new MockcloudError('InvalidContent', 'body must be a JSON object like {"count": 10}');
    }
    const b = body as Record<string, unknown>;
    const unknown = Object.keys(b).filter((k) => !['count', 'profile', 'hostnamePrefix'].includes(k));
    if (unknown.length > 0) throw new MockcloudError('InvalidArgument', `unknown key(s): ${unknown.join(', ')}`);
    if (typeof b.count !== 'number' || !Number.isInteger(b.count) || b.count < 1 || b.count > MAX_CREATE_COUNT) {
      throw new MockcloudError('InvalidArgument', `"count" must be an integer from 1 to ${MAX_CREATE_COUNT}`);
    }
    const req: CreateRequest = { count: b.count };
    if (b.profile !== undefined) {
      if (typeof b.profile !== 'string') throw new MockcloudError('InvalidArgument', '"profile" must be a string');
      getProfile(b.profile);
      req.profile = b.profile;
    }
    if (b.hostnamePrefix !== undefined) {
      if (typeof b.hostnamePrefix !== 'string' || !HOSTNAME_PREFIX_RE.test(b.hostnamePrefix)) {
        throw new MockcloudError('InvalidArgument', '"hostnamePrefix" must be 1-16 letters, digits or dashes, starting with a letter');
      }
      req.hostnamePrefix = b.hostnamePrefix;
    }
    return req;
  }

  async create(req: CreateRequest): Promise<CreateResult> {
    const result: CreateResult = { created: [], errors: [] };
    const indexes = Array.from({ length: req.count }, (_, i) => i);
    await mapLimit(indexes, this.o.concurrency ?? 16, async () => {
      try {
        result.created.push(await this.createOne(req));
      } catch (err) {
        const e = toMockcloudError(err);
        this.o.countError('create-server');
        this.o.log.error({ err: e }, `creating a server failed: ${e.message}`);
        result.errors.push({ code: e.restCode, message: e.message });
      }
    });
    return result;
  }

  private async createOne(req: CreateRequest): Promise<CreatedServer> {
    const { config, fleet, log } = this.o;
    const profile = getProfile(req.profile);
    const uuid = newUuid();
    const adminMac = await this.freeMac();
    const extraMac = await this.freeMac();
    await beginServerCreation(config.dataDir, { uuid, startedAt: new Date().toISOString(), napiMacs: this.napi ? [adminMac] : [] });
    let allocated = false;
    try {
      const adminIp = await this.allocateAdminNic(adminMac);
      allocated = this.napi !== undefined;
      const sysinfo = buildSysinfo({
        uuid,
        profile,
        datacenterName: config.datacenterName,
        platform: config.platform,
        adminMac,
        adminIp,
        extraMac,
        ...(req.hostnamePrefix ? { hostnamePrefix: req.hostnamePrefix } : {}),
        ...(req.headnode ? { headnode: true } : {}),
        ...(this.o.externalNics ? { externalNic: true } : {}),
      });
      await finishServerCreation(config.dataDir, sysinfo);
    } catch (err) {
      if (allocated) await this.releaseNic(adminMac).catch(() => undefined);
      await abortServerCreation(config.dataDir, uuid).catch(() => undefined);
      throw err;
    }
    // From here the server exists on disk; a start failure is reported but the dir stays
    // (the next daemon start loads it).
    const cn = await fleet.load(uuid).catch((err: unknown) => {
      const e = toMockcloudError(err);
      throw new MockcloudError('InternalError', `server ${uuid} was created but could not start: ${e.message}`, { cause: err });
    });
    log.info({ server: uuid, serverHostname: cn.hostname, profile: profile.name }, 'created server');
    const created: CreatedServer = {
      uuid,
      hostname: cn.hostname,
      adminIp: String(cn.sysinfo['Admin IP'] ?? ''),
      profile: profile.name,
    };
    if (cn.agentAddress) created.agentAddress = { ...cn.agentAddress };
    return created;
  }

  /**
   * The dev DC's headnode server: one mock CN whose sysinfo says it is the headnode, made when
   * the daemon runs its embedded dev headnode and the data dir has none yet (a real DC always
   * has its headnode in CNAPI; tools and tests start from `GET /servers?headnode=true`).
   */
  async createHeadnode(): Promise<CreatedServer> {
    return this.createOne({ count: 1, headnode: true });
  }

  /** Finish or undo an interrupted creation found at start (`.creating-<uuid>`). */
  async recoverCreation(uuid: string): Promise<void> {
    const marker = await readCreateMarker(this.o.config.dataDir, uuid);
    const macs = new Set(marker?.napiMacs ?? []);
    // finishServerCreation drops the marker before it writes sysinfo.json and renames the dir:
    // a crash in between leaves no marker, but the staged sysinfo still names the admin NIC.
    const staged = await this.stagedAdminMac(uuid);
    if (staged && this.napi) macs.add(staged);
    for (const mac of macs) await this.releaseNic(mac);
    await abortServerCreation(this.o.config.dataDir, uuid);
    this.o.log.info({ server: uuid, macs: [...macs] }, 'cleaned up an interrupted server creation');
  }

  /** The admin MAC in an interrupted creation's staged sysinfo.json, if it got that far. */
  private async stagedAdminMac(uuid: string): Promise<string | undefined> {
    try {
      const text = await fsp.readFile(path.join(creatingDir(this.o.config.dataDir, uuid), SYSINFO_FILE), 'utf8');
      const mac = adminNicOf(JSON.parse(text) as Sysinfo).mac;
      return typeof mac === 'string' && mac ? mac : undefined;
    } catch {
      return undefined; // absent or cut short: nothing was staged beyond the marker
    }
  }

  /**
   * Remove a CN everywhere: stop it, then (best effort: warnings are reported, not fatal) mark
   * its VMs destroyed in VMAPI, release its VMs' NICs and its own NICs in NAPI (the admin NIC,
   * claimed by net-agent or still `belongs_to_type: other`), delete its CNAPI record and its
   * agent instances in SAPI, and finally delete its dir.
   */
  async remove(uuid: string): Promise<RemoveResult> {
    const { fleet, config } = this.o;
    const known = fleet.get(uuid);
    if (!known) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
    if (isHeadnodeSysinfo(known.sysinfo)) {
      throw new MockcloudError('Conflict', `server ${uuid} is the dev DC's headnode; it is not deleted`);
    }
    // The VM store closes with the CN: note its VMs first.
    const vmUuids = new Set<string>(known.vms.list({ include_dni: true }).map((vm) => String(vm.uuid)));
    const cn = await fleet.remove(uuid);
    if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
    const warnings: string[] = [];
    const warn = (what: string) => (e: Error): void => {
      warnings.push(`${what}: ${e.message}`);
    };
    if (this.vmapi) await this.destroyVmsInVmapi(uuid, vmUuids).catch(warn('VMAPI'));
    if (this.napi) {
      const macs = new Set<string>();
      const admin = adminNicOf(cn.sysinfo).mac;
      if (admin) macs.add(admin);
      for (const owner of [uuid, ...vmUuids]) {
        const owned = await this.o.http
          .request<{ mac?: string }[]>({ method: 'GET', url: `${this.napi}/nics?belongs_to_uuid=${owner}` })
          .catch((e: Error) => e);
        if (owned instanceof Error) warnings.push(`NAPI: ${owned.message}`);
        else if (owned.statusCode >= 300) warnings.push(`NAPI GET /nics?belongs_to_uuid=${owner}: ${owned.statusCode}`);
        else if (Array.isArray(owned.body)) for (const nic of owned.body) if (typeof nic.mac === 'string') macs.add(nic.mac);
      }
      for (const mac of macs) await this.releaseNic(mac).catch(warn('NAPI'));
    }
    if (this.cnapi) {
      const res = await this.o.http.request({ method: 'DELETE', url: `${this.cnapi}/servers/${uuid}` }).catch((e: Error) => e);
      if (res instanceof Error) warnings.push(`CNAPI: ${res.message}`);
      else if (res.statusCode >= 300 && res.statusCode !== 404) warnings.push(`CNAPI DELETE /servers/${uuid}: ${res.statusCode}`);
    }
    if (this.o.releaseAgentInstances) {
      warnings.push(...(await this.o.releaseAgentInstances(cn).catch((e: Error) => [`SAPI: ${e.message}`])));
    }
    // The dir goes last: a removal cut short leaves a whole CN that the next start loads and a
    // second delete finishes, never Triton records of a CN that no longer exists.
    await removeServerDir(config.dataDir, uuid);
    await Promise.resolve(this.o.onRemoved?.(uuid)).catch((e: Error) => warnings.push(`agent IP: ${e.message}`));
    for (const w of warnings) this.o.log.warn({ server: uuid }, `removing server: ${w}`);
    this.o.log.info({ server: uuid, vms: vmUuids.size }, 'removed server');
    return { uuid, ...(vmUuids.size > 0 ? { vms: [...vmUuids].sort() } : {}), warnings };
  }

  /**
   * The CN is gone, so are its VMs: tell VMAPI the way vm-agent tells it a VM went away
   * (`PUT /vms/:uuid` with state destroyed), for every VM VMAPI places on it and every VM that
   * was on its disk. Adds VMAPI's VM uuids to `vmUuids` (their NICs go too).
   */
  private async destroyVmsInVmapi(serverUuid: string, vmUuids: Set<string>): Promise<void> {
    const byUuid = new Map<string, Record<string, unknown>>();
    const pageSize = 1000;
    for (let offset = 0; ; offset += pageSize) {
      const res = await this.o.http.request<Record<string, unknown>[]>({
        method: 'GET',
        url: `${this.vmapi}/vms?server_uuid=${serverUuid}&state=active&limit=${pageSize}&offset=${offset}`,
      });
      if (res.statusCode >= 300 || !Array.isArray(res.body)) throw new Error(`GET /vms?server_uuid=${serverUuid}: ${res.statusCode}`);
      for (const vm of res.body) if (typeof vm.uuid === 'string') byUuid.set(vm.uuid, vm);
      if (res.body.length < pageSize) break;
    }
    for (const u of byUuid.keys()) vmUuids.add(u);
    const now = new Date().toISOString();
    for (const vmUuid of vmUuids) {
      const vm = byUuid.get(vmUuid) ?? { uuid: vmUuid, server_uuid: serverUuid };
      const res = await this.o.http.request({
        method: 'PUT',
        url: `${this.vmapi}/vms/${vmUuid}`,
        body: { ...vm, state: 'destroyed', zone_state: 'destroyed', destroyed: now, last_modified: now },
      });
      if (res.statusCode >= 300 && res.statusCode !== 404) throw new Error(`PUT /vms/${vmUuid}: ${res.statusCode}`);
    }
  }

  /**
   * A random mock MAC that no mock CN of this daemon uses or is being given, and that NAPI does
   * not know yet (the original gave up on a clash). The local check matters: only the admin MAC
   * is registered in NAPI, and 10,000 CNs drawing from 2^24 MACs would otherwise share some.
   */
  private async freeMac(): Promise<string> {
    const taken = this.macsTaken();
    for (let i = 0; i < MAC_ATTEMPTS; i++) {
      const mac = (this.o.randomMac ?? randomMockMac)();
      if (taken.has(mac)) continue;
      taken.add(mac);
      if (!this.napi) return mac;
      const res = await this.napiCall('GET', `/nics/${mac.replace(/:/g, '')}`);
      if (res.statusCode === 404) return mac;
      if (res.statusCode >= 200 && res.statusCode < 300) continue;
      throw napiError(`GET /nics/${mac.replace(/:/g, '')}`, res);
    }
    throw new MockcloudError('ServiceUnavailable', `no free MAC address found in ${MAC_ATTEMPTS} attempts`);
  }

  /** Built once from the fleet, then kept by `freeMac` (a deleted CN's MACs stay taken: harmless). */
  private macsTaken(): Set<string> {
    if (!this.takenMacs) {
      this.takenMacs = new Set();
      for (const cn of this.o.fleet.list()) {
        for (const nic of Object.values(cn.sysinfo['Network Interfaces'] ?? {})) {
          const mac = (nic as { 'MAC Address'?: unknown })['MAC Address'];
          if (typeof mac === 'string') this.takenMacs.add(normalizeMac(mac));
        }
      }
    }
    return this.takenMacs;
  }

  private async allocateAdminNic(mac: string): Promise<string> {
    if (!this.napi) return this.o.config.bindIp;
    const admin = this.o.config.adminUuid;
    const res = await this.napiCall('POST', '/networks/admin/nics', {
      belongs_to_type: 'other',
      belongs_to_uuid: admin,
      owner_uuid: admin,
      mac,
      nic_tags_provided: ['admin'],
    });
    const ip = (res.body as { ip?: unknown } | undefined)?.ip;
    if (res.statusCode < 200 || res.statusCode >= 300) throw napiError('POST /networks/admin/nics', res);
    if (typeof ip !== 'string' || ip === '') {
      throw new MockcloudError('BadGateway', 'NAPI POST /networks/admin/nics answered without an ip');
    }
    return ip;
  }

  private async releaseNic(mac: string): Promise<void> {
    if (!this.napi) return;
    const nicPath = `/nics/${mac.replace(/:/g, '')}`;
    const res = await this.napiCall('DELETE', nicPath);
    if (res.statusCode >= 300 && res.statusCode !== 404) throw napiError(`DELETE ${nicPath}`, res);
  }

  private async napiCall(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) {
    try {
      return await this.o.http.request({ method, url: `${this.napi}${path}`, ...(body === undefined ? {} : { body }) });
    } catch (err) {
      this.o.countError('napi');
      throw new MockcloudError('BadGateway', `NAPI ${method} ${path} (${this.napi}): ${(err as Error).message}`, { cause: err });
    }
  }
}

function napiError(what: string, res: { statusCode: number; body: unknown }): MockcloudError {
  const b = res.body as { code?: string; message?: string } | undefined;
  return new MockcloudError(
    'BadGateway',
    `NAPI ${what}: ${res.statusCode}${b?.code ? ` ${b.code}` : ''}${b?.message ? `: ${b.message}` : ''}`,
  );
}
