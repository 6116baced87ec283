/**
 * Creating and removing mock CNs while the daemon runs (the control API's POST/DELETE
 * /servers), as the original create-server / delete-server tools did (cn-agent-spec §6):
 *
 * create: fresh MACs for dnet0/dnet1 (each checked free in NAPI, regenerated on a clash), the
 *   admin NIC from NAPI `POST /networks/admin/nics` (belongs_to_type 'other', owned by the
 *   admin user), its IP as dnet0's ip4addr and "Admin IP", the server dir written durably with
 *   sysinfo and agents, then the CN starts at once. Bounded parallelism.
 * remove: the CN stops and its dir becomes `.deleting-<uuid>`; VMAPI marks its VMs destroyed,
 *   NAPI releases its NICs and its VMs' NICs, CNAPI forgets it, each call retried with backoff;
 *   SAPI its agent instances (the SAPI plug-in retries those on its own: a warning, not a failure);
 *   only then do its files go. What could not be cleaned up keeps the CN "deleting": the removal
 *   fails, and the next start (or the next delete of that uuid) finishes it.
 *
 * Nothing leaks from an interrupted creation either: the admin NIC's MAC is recorded on disk
 * before NAPI is asked for it, and a creation that fails keeps that record unless the NIC is
 * released, so the next start releases it.
 *
 * Without a NAPI URL (standalone) the admin IP is the bind IP and nothing is allocated.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { JsonHttpClient } from '../common/http-client.js';
import type { Sysinfo } from '../common/sysinfo.js';
import { creatingDir, deletingDir, pathsUnder, serverPaths, SYSINFO_FILE } from '../mockcn/layout.js';
import { MockcloudError, toMockcloudError } from '../common/errors.js';
import { logFailure, type Logger } from '../common/log.js';
import { adminNicOf, readSysinfoFile } from '../mockcn/sysinfo-file.js';
import { hasPlacement, OVERPROVISION_KEYS, placementBody, ProfileCatalogue, type HardwareProfile, type Placement } from '../mockcn/profiles.js';
import { randomStream } from '../common/seeded-random.js';
import { apportion, parseMix, type Mix } from './fleet-mix.js';
import { CreationDraws, cnStreams, type CnStreams } from './creation-draws.js';
import {
  abortServerCreation,
  beginServerCreation,
  finishServerCreation,
  finishServerRemoval,
  isServerDeleting,
  markServerDeleting,
  readCreateMarker,
} from '../mockcn/server-dir.js';
import { retryWithBackoff } from '../common/retry.js';
import { buildSysinfo, isHeadnodeSysinfo, macPairFrom, randomMockMac, serverUuidFor } from '../mockcn/sysinfo-template.js';
import { normalizeMac } from '../vmadm/nics.js';
import { profileFromObject } from '../mockcn/profile-files.js';
import { isUuid } from '../common/uuid.js';
import type { DaemonConfig } from './config.js';
import { mapLimit } from './concurrency.js';
import type { Fleet } from './fleet.js';
import type { AgentRecord, MockCn } from '../mockcn/types.js';
import { readAgents } from '../mockcn/agents-dir.js';
import { markOff } from '../mockcn/power-cycle.js';

export const MAX_CREATE_COUNT = 10_000;
export const HOSTNAME_PREFIX_RE = /^[A-Za-z][A-Za-z0-9-]{0,15}$/;

export interface CreateRequest {
  count: number;
  profile?: string;
  /** A weighted mix of profiles (not with `profile`): exact counts by largest remainder. */
  mix?: Mix;
  /** The draws' seed for this request; the daemon's `seed` by default. */
  seed?: string;
  /** Placement set in CNAPI on each new CN, over its profile's. */
  placement?: Placement;
  hostnamePrefix?: string;
  /** The dev DC's headnode server (never from the control API: see createHeadnode). */
  headnode?: boolean;
  /**
   * One CN of a given identity and hardware (`mockcloud mirror load`): its UUID and hostname
   * instead of drawn ones, and a profile given inline (a profile file's keys) instead of named.
   */
  uuid?: string;
  hostname?: string;
  hardware?: HardwareProfile;
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
  releaseAgentInstances?: (cn: Pick<MockCn, 'uuid' | 'agents'>) => Promise<string[]>;
  /** The MAC draw; from the CN's seeded stream by default (tests force clashes with it). */
  randomMac?: () => string;
  /** The profiles requests may name; the built-ins by default. */
  profiles?: ProfileCatalogue;
  /** How long a new CN with a placement may take to register with CNAPI (ms). */
  registerTimeoutMs?: number;
  /** The daemon is stopping: clean-up retries stop waiting. */
  stopped?: () => boolean;
  /**
   * New CNs boot from booter (src/boot): no admin NIC is asked of NAPI here, booter makes it at
   * the CN's first boot, which this runs (resolving when it came up, or gave up waiting).
   */
  firstBoot?: (cn: MockCn) => Promise<void>;
}

const MAC_ATTEMPTS = 5;

export class ServerFactory {
  private readonly o: ServerFactoryOptions;
  private readonly napi: string | undefined;
  private readonly cnapi: string | undefined;
  private readonly vmapi: string | undefined;
  private takenMacs: Set<string> | undefined;
  /** Removed CNs whose clean-up in Triton is not done (`.deleting-<uuid>` on disk). */
  private readonly deleting = new Set<string>();
  /** Clean-ups running, by uuid. */
  private readonly removing = new Map<string, Promise<RemoveResult>>();
  private readonly draws: CreationDraws;
  readonly profiles: ProfileCatalogue;

  constructor(opts: ServerFactoryOptions) {
    this.o = opts;
    this.draws = new CreationDraws(opts.config.dataDir);
    this.profiles = opts.profiles ?? new ProfileCatalogue();
    this.napi = opts.config.urls.napi;
    this.cnapi = opts.config.urls.cnapi;
    this.vmapi = opts.config.urls.vmapi;
  }

  /** Validate a create request from the control API (external input). */
  static validate(body: unknown, profiles: ProfileCatalogue = new ProfileCatalogue()): CreateRequest {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new MockcloudError('InvalidContent', 'body must be a JSON object like {"count": 10}');
    }
    const b = body as Record<string, unknown>;
    const known = ['count', 'profile', 'mix', 'seed', 'placement', 'hostnamePrefix', 'uuid', 'hostname', 'hardware'];
    const unknown = Object.keys(b).filter((k) => !known.includes(k));
    if (unknown.length > 0) throw new MockcloudError('InvalidArgument', `unknown key(s): ${unknown.join(', ')}`);
    if (typeof b.count !== 'number' || !Number.isInteger(b.count) || b.count < 1 || b.count > MAX_CREATE_COUNT) {
      throw new MockcloudError('InvalidArgument', `"count" must be an integer from 1 to ${MAX_CREATE_COUNT}`);
    }
    const req: CreateRequest = { count: b.count };
    if (b.profile !== undefined) {
      if (typeof b.profile !== 'string') throw new MockcloudError('InvalidArgument', '"profile" must be a string');
      profiles.get(b.profile);
      req.profile = b.profile;
    }
    if (b.mix !== undefined) {
      if (req.profile !== undefined) throw new MockcloudError('InvalidArgument', 'give "profile" or "mix", not both');
      const mix = parseMix(b.mix);
      for (const [name] of mix) profiles.get(name);
      req.mix = mix;
    }
    if (b.seed !== undefined) {
      if (typeof b.seed !== 'string' || b.seed === '' || b.seed.length > 256) {
        throw new MockcloudError('InvalidArgument', '"seed" must be a non-empty string of at most 256 characters');
      }
      req.seed = b.seed;
    }
    if (b.placement !== undefined) req.placement = validatePlacement(b.placement, '"placement"');
    if (b.hostnamePrefix !== undefined) {
      if (typeof b.hostnamePrefix !== 'string' || !HOSTNAME_PREFIX_RE.test(b.hostnamePrefix)) {
        throw new MockcloudError('InvalidArgument', '"hostnamePrefix" must be 1-16 letters, digits or dashes, starting with a letter');
      }
      req.hostnamePrefix = b.hostnamePrefix;
    }
    validateIdentity(b, req, profiles);
    return req;
  }

  /**
   * Create `req.count` CNs. Everything random is drawn before the parallel part, in order:
   * each CN's ordinal (creation-draws.ts), its profile (a mix's exact counts, shuffled by the
   * request's `mix` stream) and its first MAC pair (kept unique among this daemon's CNs in
   * that order), so a seed gives the same CNs whatever the timing.
   */
  async create(req: CreateRequest): Promise<CreateResult> {
    const result: CreateResult = { created: [], errors: [] };
    const seed = req.seed ?? this.o.config.seed;
    // A CN of a given uuid draws from streams named by its uuid: no ordinal (no write of
    // draws.json, which a mirror load would make once per CN, one after the other).
    const first = req.uuid ? 0 : await this.draws.reserve(req.count);
    const profiles = this.profilesFor(req, seed, first);
    const plans: CnPlan[] = profiles.map((profile, i) => {
      const streams = req.uuid ? cnStreams(seed, req.uuid) : cnStreams(seed, first + i);
      // No free pair in its draws: that CN's creation fails (drawing again), not the request.
      const firstPair = (() => {
        try {
          return this.drawLocalPair(streams);
        } catch {
          return undefined;
        }
      })();
      return { profile, streams, ...(firstPair ? { firstPair } : {}) };
    });
    // Created in order of the plans; results in order of completion.
    await mapLimit(plans, this.o.concurrency ?? 16, async (plan) => {
      try {
        result.created.push(await this.createOne(req, plan));
      } catch (err) {
        const e = toMockcloudError(err);
        this.o.countError('create-server');
        logFailure(this.o.log, e, {}, `creating a server failed: ${e.message}`);
        result.errors.push({ code: e.restCode, message: e.message });
      }
    });
    return result;
  }

  /** Each CN's profile, in creation order. */
  private profilesFor(req: CreateRequest, seed: string | undefined, first: number): HardwareProfile[] {
    if (req.hardware) return [req.hardware];
    if (!req.mix) return Array.from({ length: req.count }, () => this.profiles.get(req.profile));
    const counts = apportion(req.count, req.mix);
    const names: string[] = [];
    for (const [name] of req.mix) for (let i = 0; i < counts.get(name)!; i++) names.push(name);
    return randomStream(seed, `mix:${first}`)
      .shuffle(names)
      .map((name) => this.profiles.get(name));
  }

  /** A MAC pair no CN of this daemon has or is being given, drawn from the CN's stream. */
  private drawLocalPair(streams: CnStreams): { admin: string; extra: string } {
    const taken = this.macsTaken();
    for (let i = 0; i < MAC_ATTEMPTS; i++) {
      const pair = macPairFrom(this.o.randomMac ? this.o.randomMac() : randomMockMac(streams.mac));
      if (taken.has(pair.admin) || taken.has(pair.extra)) continue;
      taken.add(pair.admin);
      taken.add(pair.extra);
      return pair;
    }
    throw new MockcloudError('ServiceUnavailable', `no free MAC address found in ${MAC_ATTEMPTS} attempts`);
  }

  private async createOne(req: CreateRequest, plan: CnPlan): Promise<CreatedServer> {
    const { config, fleet, log } = this.o;
    const { profile, streams } = plan;
    const placement = mergePlacement(profile.placement, req.placement);
    // A headnode boots from its own disk: its admin NIC comes from NAPI directly, never by PXE.
    const viaBooter = this.o.firstBoot !== undefined && !req.headnode && profile.headnode !== true;
    let uuid = '';
    for (let attempt = 1; ; attempt++) {
      const { admin: adminMac, extra: extraMac } = await this.freeMacPair(attempt === 1 ? plan.firstPair : undefined, streams);
      uuid = req.uuid ?? serverUuidFor(adminMac, streams.uuid);
      if (req.uuid && fleet.get(uuid)) throw new MockcloudError('Conflict', `server ${uuid} already exists`);
      await beginServerCreation(config.dataDir, { uuid, startedAt: new Date().toISOString(), napiMacs: this.napi ? [adminMac] : [] });
      let adminIp = '';
      try {
        if (!viaBooter) adminIp = await this.allocateAdminNic(adminMac);
      } catch (err) {
        if (err instanceof AdminNicRefused) {
          // NAPI answered no: it made no NIC, there is nothing of ours to release.
          await abortServerCreation(config.dataDir, uuid);
          // Another daemon (or a CN from before MACs came in pairs) took the MAC first: draw again.
          if (err.duplicateMac && attempt < MAC_ATTEMPTS) continue;
          throw err.error;
        }
        await this.undoCreation(uuid, adminMac);
        throw err;
      }
      try {
        const sysinfo = buildSysinfo({
          uuid,
          profile,
          datacenterName: config.datacenterName,
          platform: config.platform,
          adminMac,
          adminIp,
          extraMac,
          ...(req.hostnamePrefix ? { hostnamePrefix: req.hostnamePrefix } : {}),
          ...(req.hostname ? { hostname: req.hostname } : {}),
          ...(req.headnode ? { headnode: true } : {}),
          ...(this.o.externalNics ? { externalNic: true } : {}),
          random: streams.disks,
        });
        await finishServerCreation(config.dataDir, sysinfo, {
          profile: profile.name,
          ...(hasPlacement(placement) ? { placement } : {}),
        });
        // Off until its first boot: a daemon stopped before it boots boots it at its next start.
        if (viaBooter) await markOff({ paths: serverPaths(config.dataDir, uuid) }, 'create');
      } catch (err) {
        await this.undoCreation(uuid, adminMac);
        throw err;
      }
      break;
    }
    // From here the server exists on disk; a start failure is reported but the dir stays
    // (the next daemon start loads it).
    const cn = await fleet.load(uuid, { fresh: true, off: viaBooter }).catch((err: unknown) => {
      const e = toMockcloudError(err);
      throw new MockcloudError('InternalError', `server ${uuid} was created but could not start: ${e.message}`, { cause: err });
    });
    if (viaBooter) await this.o.firstBoot!(cn);
    if (hasPlacement(placement) && this.cnapi) await this.applyPlacement(cn, placement);
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
    const req: CreateRequest = { count: 1, headnode: true };
    const seed = this.o.config.seed;
    const streams = cnStreams(seed, await this.draws.reserve(1));
    return this.createOne(req, { profile: this.profiles.get(undefined), streams, firstPair: this.drawLocalPair(streams) });
  }

  /**
   * A new CN's placement, set in CNAPI as an operator's `sdc-server update` would (POST
   * /servers/:uuid): once CNAPI has the CN, which it has when the CN's sysinfo registration
   * is accepted.
   */
  private async applyPlacement(cn: MockCn, placement: Placement): Promise<void> {
    const deadline = Date.now() + (this.o.registerTimeoutMs ?? 30_000);
    while (!cn.registered) {
      if (Date.now() > deadline || this.o.stopped?.()) {
        throw new MockcloudError('InternalError', `server ${cn.uuid} was created but did not register with CNAPI in time to get its placement`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.updateInCnapi(cn.uuid, placementBody(placement)).catch((err: unknown) => {
      throw new MockcloudError('BadGateway', `server ${cn.uuid} was created but its placement was not set: ${toMockcloudError(err).message}`, { cause: err });
    });
  }

  /**
   * Set a CN's placement fields in CNAPI (ServerUpdate, sdc-cnapi lib/endpoints/servers.js):
   * traits, reserved, reservoir, overprovision_ratios. Retried as the clean-ups are.
   */
  async updateInCnapi(uuid: string, body: Record<string, unknown>): Promise<void> {
    if (!this.cnapi) throw new MockcloudError('PreconditionFailed', 'this daemon reports to no CNAPI: there is no placement to set');
    const refused = new Set<unknown>();
    await retryWithBackoff(
      async () => {
        const res = await this.o.http.request({ method: 'POST', url: `${this.cnapi}/servers/${uuid}`, body });
        if (res.statusCode < 300) return;
        const err = httpError('CNAPI', `POST /servers/${uuid}`, res);
        // CNAPI refused the content (or has no such server): no retry makes it take it.
        if (res.statusCode < 500) refused.add(err);
        throw err;
      },
      {
        attempts: 5,
        minDelayMs: 100,
        maxDelayMs: 2000,
        retryable: (err) => !refused.has(err),
        ...(this.o.stopped ? { stopped: this.o.stopped } : {}),
      },
    );
  }

  /**
   * A creation failed: release its admin NIC (whether or not NAPI answered the POST: an answer
   * lost to a reset may hide a NIC that was made; a DELETE of none is a 404), then drop the
   * staging dir. If NAPI cannot be told (it is down, the daemon is stopping), the staging dir
   * and its marker stay, and the next start releases the NIC.
   */
  private async undoCreation(uuid: string, adminMac: string): Promise<void> {
    try {
      if (this.napi) await this.withRetries(() => this.releaseNic(adminMac));
      await abortServerCreation(this.o.config.dataDir, uuid);
    } catch (err) {
      this.o.log.warn({ err, server: uuid, mac: adminMac }, 'cannot release the admin NIC of a failed creation now; the next start does');
    }
  }

  /** Finish or undo an interrupted creation found at start (`.creating-<uuid>`). */
  async recoverCreation(uuid: string): Promise<void> {
    const marker = await readCreateMarker(this.o.config.dataDir, uuid);
    const macs = new Set(marker?.napiMacs ?? []);
    // finishServerCreation drops the marker before it writes sysinfo.json and renames the dir:
    // a crash in between leaves no marker, but the staged sysinfo still names the admin NIC.
    const staged = await this.stagedAdminMac(uuid);
    if (staged && this.napi) macs.add(staged);
    for (const mac of macs) await this.withRetries(() => this.releaseNic(mac));
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
   * Remove a CN everywhere: stop it, make its dir `.deleting-<uuid>`, then mark its VMs
   * destroyed in VMAPI, release its VMs' NICs and its own NICs in NAPI (the admin NIC, claimed
   * by net-agent or still `belongs_to_type: other`) and delete its CNAPI record, each retried
   * with backoff, and its agent instances in SAPI; its files go only when all of that is done. Otherwise the removal fails and
   * the CN stays "deleting" until a later delete of it, or the next start, finishes the job.
   * A uuid that is already "deleting" is finished the same way.
   */
  async remove(uuid: string): Promise<RemoveResult> {
    const { fleet, config } = this.o;
    const known = fleet.get(uuid);
    if (!known) {
      if (this.removing.has(uuid) || (await isServerDeleting(config.dataDir, uuid))) return this.finishRemoval(uuid);
      throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
    }
    if (isHeadnodeSysinfo(known.sysinfo)) {
      throw new MockcloudError('Conflict', `server ${uuid} is the dev DC's headnode; it is not deleted`);
    }
    // The VM store closes with the CN: note its VMs first.
    const vmUuids = new Set<string>(known.vms.list({ include_dni: true }).map((vm) => String(vm.uuid)));
    const cn = await fleet.remove(uuid);
    if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
    await markServerDeleting(config.dataDir, uuid);
    this.deleting.add(uuid);
    return this.once(uuid, () => this.cleanUp(uuid, adminNicOf(cn.sysinfo).mac, vmUuids, cn.agents));
  }

  /** CNs removed but not yet cleaned up in Triton (kept as `.deleting-<uuid>`). */
  get deletingServers(): string[] {
    return [...this.deleting].sort();
  }

  /**
   * Finish the removals an earlier run left (`.deleting-<uuid>` dirs found at start), a few at
   * a time, in the background of the start. Failures keep them "deleting" for the next try.
   */
  async resumeRemovals(uuids: readonly string[]): Promise<void> {
    for (const u of uuids) this.deleting.add(u);
    if (uuids.length > 0) this.o.log.info({ servers: uuids.length }, 'finishing interrupted server removals');
    await mapLimit([...uuids], 8, async (uuid) => {
      await this.finishRemoval(uuid).catch((err: unknown) =>
        this.o.log.warn({ err, server: uuid }, 'server removal still not finished; will try again at the next start'),
      );
    });
  }

  /** Clean up a `.deleting-<uuid>` dir's server in Triton, then drop the dir. */
  private finishRemoval(uuid: string): Promise<RemoveResult> {
    return this.once(uuid, async () => {
      const dir = pathsUnder(deletingDir(this.o.config.dataDir, uuid));
      const sysinfo = await readSysinfoFile(dir.sysinfo, uuid).catch(() => undefined);
      const vmUuids = new Set<string>();
      for (const f of await fsp.readdir(dir.vms).catch(() => [] as string[])) {
        const m = /^([0-9a-f-]{36})\.json$/.exec(f);
        if (m) vmUuids.add(m[1]!);
      }
      const agents = await readAgents(dir.agents, uuid).catch(() => undefined);
      return this.cleanUp(uuid, sysinfo ? adminNicOf(sysinfo).mac : undefined, vmUuids, agents);
    });
  }

  /** One clean-up of a uuid at a time (a delete and the start's resume may meet). */
  private once(uuid: string, fn: () => Promise<RemoveResult>): Promise<RemoveResult> {
    const running = this.removing.get(uuid);
    if (running) return running;
    const p = fn().finally(() => this.removing.delete(uuid));
    this.removing.set(uuid, p);
    return p;
  }

  private async cleanUp(
    uuid: string,
    adminMac: string | undefined,
    vmUuids: Set<string>,
    agents: readonly AgentRecord[] | undefined,
  ): Promise<RemoveResult> {
    const { config } = this.o;
    const failures: string[] = [];
    const step = async (what: string, fn: () => Promise<void>): Promise<void> => {
      try {
        await this.withRetries(fn);
      } catch (err) {
        failures.push(`${what}: ${toMockcloudError(err).message}`);
      }
    };
    // CNAPI's record goes meanwhile; NAPI waits for VMAPI, which names the VMs whose NICs go too.
    const cnapiDone = this.cnapi
      ? step('CNAPI', async () => {
          const res = await this.o.http.request({ method: 'DELETE', url: `${this.cnapi}/servers/${uuid}` });
          if (res.statusCode >= 300 && res.statusCode !== 404) throw httpError('CNAPI', `DELETE /servers/${uuid}`, res);
        })
      : Promise.resolve();
    if (this.vmapi) await step('VMAPI', () => this.destroyVmsInVmapi(uuid, vmUuids));
    if (this.napi) {
      const macs = new Set<string>();
      if (adminMac) macs.add(adminMac);
      for (const owner of [uuid, ...vmUuids]) {
        await step('NAPI', async () => {
          const owned = await this.napiCall('GET', `/nics?belongs_to_uuid=${owner}`);
          if (owned.statusCode >= 300 || !Array.isArray(owned.body)) throw napiError(`GET /nics?belongs_to_uuid=${owner}`, owned);
          for (const nic of owned.body as { mac?: unknown }[]) if (typeof nic.mac === 'string') macs.add(nic.mac);
        });
      }
      await Promise.all([...macs].map((mac) => step('NAPI', () => this.releaseNic(mac))));
    }
    await cnapiDone;
    if (failures.length > 0) {
      this.o.countError('delete-server');
      for (const f of failures) this.o.log.warn({ server: uuid }, `removing server: ${f}`);
      throw new MockcloudError(
        'BadGateway',
        `server ${uuid} is stopped but kept as "deleting": ${failures.join('; ')}; ` +
          'the daemon finishes the clean-up at its next start, or run delete-servers on it again',
      );
    }
    // Nothing in CNAPI, VMAPI or NAPI refers to the CN any more. SAPI's instances do not hold
    // the removal up: the SAPI plug-in keeps the ones it could not delete and retries them.
    const warnings: string[] = [];
    if (this.o.releaseAgentInstances) {
      warnings.push(...(await this.o.releaseAgentInstances({ uuid, agents }).catch((e: Error) => [`SAPI: ${e.message}`])));
    }
    await finishServerRemoval(config.dataDir, uuid);
    this.deleting.delete(uuid);
    await Promise.resolve(this.o.onRemoved?.(uuid)).catch((e: Error) => warnings.push(`agent IP: ${e.message}`));
    this.o.log.info({ server: uuid, vms: vmUuids.size }, 'removed server');
    return { uuid, ...(vmUuids.size > 0 ? { vms: [...vmUuids].sort() } : {}), warnings };
  }

  /** A Triton call of a clean-up: tried again with backoff, unless the daemon is stopping. */
  private withRetries<T>(fn: () => Promise<T>): Promise<T> {
    return retryWithBackoff(fn, { attempts: 5, minDelayMs: 100, maxDelayMs: 2000, ...(this.o.stopped ? { stopped: this.o.stopped } : {}) });
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
   * A CN's MAC pair (macPairFrom: an even admin MAC and the next one) that no mock CN of this
   * daemon has or is being given. NAPI is asked about the second one only: the admin MAC is
   * checked by NAPI itself when the admin NIC is made (a duplicate is refused, and drawn
   * again), and the second one is taken wherever the admin MAC is, except by a CN made before
   * MACs came in pairs, which NAPI knows.
   */
  private async freeMacPair(first: { admin: string; extra: string } | undefined, streams: CnStreams): Promise<{ admin: string; extra: string }> {
    for (let i = 0; i < MAC_ATTEMPTS; i++) {
      const pair = i === 0 && first ? first : this.drawLocalPair(streams);
      if (!this.napi) return pair;
      const nicPath = `/nics/${pair.extra.replace(/:/g, '')}`;
      const res = await this.napiCall('GET', nicPath);
      if (res.statusCode === 404) return pair;
      if (res.statusCode >= 200 && res.statusCode < 300) continue;
      throw napiError(`GET ${nicPath}`, res);
    }
    throw new MockcloudError('ServiceUnavailable', `no free MAC address found in ${MAC_ATTEMPTS} attempts`);
  }

  /** Built once from the fleet, then kept by `freeMacPair` (a deleted CN's MACs stay taken: harmless). */
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

  /**
   * The admin NIC, from NAPI's admin network. A POST whose answer is lost (a reset socket, a
   * timeout) may or may not have made the NIC; the MAC is ours (drawn free, recorded in the
   * creation marker), so NAPI is asked for it: a NIC with it is the one asked for, none means
   * the POST can be sent again.
   */
  private async allocateAdminNic(mac: string): Promise<string> {
    if (!this.napi) return this.o.config.bindIp;
    const nicPath = `/nics/${mac.replace(/:/g, '')}`;
    for (let attempt = 1; ; attempt++) {
      try {
        // Sent again: on a connection of its own (the pool's idle ones may be as stale).
        return await this.postAdminNic(mac, attempt > 1);
      } catch (err) {
        if (!(err instanceof MockcloudError && err.cause !== undefined) || attempt >= 3) throw err; // NAPI answered
      }
      const got = await this.withRetries(() => this.napiCall('GET', nicPath));
      const ip = (got.body as { ip?: unknown } | undefined)?.ip;
      if (got.statusCode === 200 && typeof ip === 'string' && ip !== '') return ip;
      if (got.statusCode !== 404) throw napiError(`GET ${nicPath}`, got);
    }
  }

  private async postAdminNic(mac: string, freshConnection: boolean): Promise<string> {
    const admin = this.o.config.adminUuid;
    const res = await this.napiCall(
      'POST',
      '/networks/admin/nics',
      { belongs_to_type: 'other', belongs_to_uuid: admin, owner_uuid: admin, mac, nic_tags_provided: ['admin'] },
      freshConnection,
    );
    const ip = (res.body as { ip?: unknown } | undefined)?.ip;
    if (res.statusCode < 200 || res.statusCode >= 300) throw new AdminNicRefused(napiError('POST /networks/admin/nics', res), isDuplicateMac(res.body));
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

  private async napiCall(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, freshConnection = false) {
    try {
      return await this.o.http.request({
        method,
        url: `${this.napi}${path}`,
        ...(body === undefined ? {} : { body }),
        ...(freshConnection ? { freshConnection } : {}),
      });
    } catch (err) {
      this.o.countError('napi');
      throw new MockcloudError('BadGateway', `NAPI ${method} ${path} (${this.napi}): ${(err as Error).message}`, { cause: err });
    }
  }
}

/** sysinfo "Hostname" of a CN: what SmartOS takes as a nodename (RFC 1123 labels, at most 63). */
const SERVER_HOSTNAME_RE = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/**
 * `uuid`, `hostname` and `hardware` (a profile file's keys, with a name) make one CN of a given
 * identity: only with count 1, and `hardware` instead of `profile` or `mix`.
 */
function validateIdentity(b: Record<string, unknown>, req: CreateRequest, profiles: ProfileCatalogue): void {
  const given = ['uuid', 'hostname', 'hardware'].filter((k) => b[k] !== undefined);
  if (given.length === 0) return;
  if (req.count !== 1) throw new MockcloudError('InvalidArgument', `${given.map((k) => `"${k}"`).join(', ')} name one server: "count" must be 1`);
  if (b.uuid !== undefined) {
    if (!isUuid(b.uuid)) throw new MockcloudError('InvalidArgument', '"uuid" must be a UUID');
    req.uuid = b.uuid.toLowerCase();
  }
  if (b.hostname !== undefined) {
    if (typeof b.hostname !== 'string' || !SERVER_HOSTNAME_RE.test(b.hostname)) {
      throw new MockcloudError('InvalidArgument', '"hostname" must be 1-63 letters, digits or dashes, not starting or ending with a dash');
    }
    if (req.hostnamePrefix !== undefined) throw new MockcloudError('InvalidArgument', 'give "hostname" or "hostnamePrefix", not both');
    req.hostname = b.hostname;
  }
  if (b.hardware !== undefined) {
    if (req.profile !== undefined || req.mix !== undefined) throw new MockcloudError('InvalidArgument', 'give "hardware", "profile" or "mix", not two of them');
    req.hardware = profileFromObject(b.hardware, '"hardware"', new Map(profiles.list().map((p) => [p.name, p])));
  }
}

/** What create() drew for one CN before the parallel part. */
interface CnPlan {
  profile: HardwareProfile;
  streams: CnStreams;
  firstPair?: { admin: string; extra: string };
}

/** The profile's placement with the request's fields over it. */
function mergePlacement(base: Placement | undefined, over: Placement | undefined): Placement | undefined {
  if (!base) return over;
  if (!over) return base;
  const out: Placement = { ...base };
  for (const [k, v] of Object.entries(over)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/**
 * A placement from the control API or a profile file (external input): traits an object,
 * reserved and reservoir booleans, overprovision ratios numbers ≥ 0 under cpu, ram, disk, io,
 * net (what CNAPI's ServerUpdate accepts).
 */
export function validatePlacement(value: unknown, what: string): Placement {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new MockcloudError('InvalidArgument', `${what} must be an object`);
  const v = value as Record<string, unknown>;
  const unknown = Object.keys(v).filter((k) => !['traits', 'reserved', 'reservoir', 'overprovisionRatios'].includes(k));
  if (unknown.length > 0) throw new MockcloudError('InvalidArgument', `${what}: unknown key(s) ${unknown.join(', ')}; known: traits, reserved, reservoir, overprovisionRatios`);
  const out: Placement = {};
  if (v.traits !== undefined) {
    if (typeof v.traits !== 'object' || v.traits === null || Array.isArray(v.traits)) throw new MockcloudError('InvalidArgument', `${what}.traits must be an object`);
    out.traits = v.traits as Record<string, unknown>;
  }
  for (const k of ['reserved', 'reservoir'] as const) {
    if (v[k] === undefined) continue;
    if (typeof v[k] !== 'boolean') throw new MockcloudError('InvalidArgument', `${what}.${k} must be true or false`);
    out[k] = v[k];
  }
  if (v.overprovisionRatios !== undefined) {
    const r = v.overprovisionRatios;
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new MockcloudError('InvalidArgument', `${what}.overprovisionRatios must be an object`);
    const ratios: Placement['overprovisionRatios'] = {};
    for (const [k, n] of Object.entries(r)) {
      if (!(OVERPROVISION_KEYS as readonly string[]).includes(k)) {
        throw new MockcloudError('InvalidArgument', `${what}.overprovisionRatios: unknown key ${k}; known: ${OVERPROVISION_KEYS.join(', ')}`);
      }
      if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new MockcloudError('InvalidArgument', `${what}.overprovisionRatios.${k} must be a number ≥ 0`);
      ratios[k as keyof typeof ratios] = n;
    }
    out.overprovisionRatios = ratios;
  }
  return out;
}

/** NAPI answered the admin NIC's POST with a refusal: no NIC was made. */
class AdminNicRefused extends Error {
  constructor(
    readonly error: MockcloudError,
    readonly duplicateMac: boolean,
  ) {
    super(error.message);
  }
}

/** NAPI's answer to a NIC whose MAC it has: InvalidParameters, `mac` Duplicate (sdc-napi nic/create.js). */
function isDuplicateMac(body: unknown): boolean {
  const errors = (body as { errors?: { field?: string; code?: string }[] } | undefined)?.errors;
  return Array.isArray(errors) && errors.some((e) => e?.field === 'mac' && e.code === 'Duplicate');
}

function napiError(what: string, res: { statusCode: number; body: unknown }): MockcloudError {
  return httpError('NAPI', what, res);
}

function httpError(service: string, what: string, res: { statusCode: number; body: unknown }): MockcloudError {
  const b = res.body as { code?: string; message?: string } | undefined;
  return new MockcloudError(
    'BadGateway',
    `${service} ${what}: ${res.statusCode}${b?.code ? ` ${b.code}` : ''}${b?.message ? `: ${b.message}` : ''}`,
  );
}
