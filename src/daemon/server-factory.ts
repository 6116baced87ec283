/**
 * Creating mock CNs while the daemon runs (the control API's POST /servers), as the original
 * create-server tool did (cn-agent-spec §6): fresh MACs for dnet0/dnet1 and the admin NIC from
 * NAPI (admin-nic.ts), its IP as dnet0's ip4addr and "Admin IP", the server dir written durably
 * with sysinfo and agents, then the CN starts at once. Bounded parallelism. A CN's placement is
 * set in CNAPI once it registers. Removing CNs (DELETE /servers) is server-removal.ts's; the
 * factory owns it, so that a creation and a removal of one uuid never overlap.
 *
 * Nothing leaks from an interrupted creation either: the admin NIC's MAC is recorded on disk
 * before NAPI is asked for it, and a creation that fails keeps that record unless the NIC is
 * released, so the next start releases it.
 *
 * Without a NAPI URL (standalone) the admin IP is the bind IP and nothing is allocated.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { MockcloudError, toMockcloudError } from '../common/errors.js';
import type { JsonHttpClient } from '../common/http-client.js';
import { logFailure, type Logger } from '../common/log.js';
import { retryWithBackoff } from '../common/retry.js';
import { randomStream } from '../common/seeded-random.js';
import type { Sysinfo } from '../common/sysinfo.js';
import { creatingDir, serverPaths, SYSINFO_FILE } from '../mockcn/layout.js';
import { markOff } from '../mockcn/power-cycle.js';
import { hasPlacement, placementBody, ProfileCatalogue, type HardwareProfile, type Placement } from '../mockcn/profiles.js';
import { abortServerCreation, beginServerCreation, finishServerCreation, isServerDeleting, readCreateMarker } from '../mockcn/server-dir.js';
import { adminNicOf } from '../mockcn/sysinfo-file.js';
import { buildSysinfo, serverUuidFor } from '../mockcn/sysinfo-template.js';
import type { MockCn } from '../mockcn/types.js';
import { AdminNicRefused, AdminNics, MAC_ATTEMPTS } from './admin-nic.js';
import { mapLimit } from './concurrency.js';
import type { DaemonConfig } from './config.js';
import { mergePlacement, type CreateRequest } from './create-request.js';
import { CreationDraws, cnStreams, type CnStreams } from './creation-draws.js';
import type { Fleet } from './fleet.js';
import { apportion } from './fleet-mix.js';
import { adminNicOwners, answerError, OwnedCleanup, withCleanupRetries } from './owned-cleanup.js';
import { ServerRemovals, type RemoveResult } from './server-removal.js';

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
  /** This daemon's id: a CNAPI record naming another daemon's is not removed. */
  daemonId?: () => string | undefined;
  /**
   * New CNs boot from booter (src/boot): no admin NIC is asked of NAPI here, booter makes it at
   * the CN's first boot, which this runs (resolving when it came up, or gave up waiting).
   */
  firstBoot?: (cn: MockCn) => Promise<void>;
}

export class ServerFactory {
  private readonly o: ServerFactoryOptions;
  private readonly napi: string | undefined;
  private readonly cnapi: string | undefined;
  private readonly nics: AdminNics;
  private readonly removals: ServerRemovals;
  /** Creations running, by uuid (once it is drawn): a delete of that uuid waits for its end. */
  private readonly creating = new Map<string, Promise<unknown>>();
  /** Every Triton delete and update of a clean-up, behind its ownership check. */
  private readonly owned: OwnedCleanup;
  private readonly draws: CreationDraws;
  readonly profiles: ProfileCatalogue;

  constructor(opts: ServerFactoryOptions) {
    this.o = opts;
    this.draws = new CreationDraws(opts.config.dataDir);
    this.profiles = opts.profiles ?? new ProfileCatalogue();
    this.napi = opts.config.urls.napi;
    this.cnapi = opts.config.urls.cnapi;
    this.owned = new OwnedCleanup({
      http: opts.http,
      log: opts.log,
      urls: opts.config.urls,
      daemonId: opts.daemonId ?? (() => undefined),
      countError: opts.countError,
    });
    this.nics = new AdminNics({ config: opts.config, fleet: opts.fleet, http: opts.http, countError: opts.countError, randomMac: opts.randomMac, stopped: opts.stopped });
    this.removals = new ServerRemovals({
      config: opts.config,
      fleet: opts.fleet,
      log: opts.log,
      countError: opts.countError,
      owned: this.owned,
      creation: (uuid) => this.creating.get(uuid),
      onRemoved: opts.onRemoved,
      releaseAgentInstances: opts.releaseAgentInstances,
      stopped: opts.stopped,
    });
  }

  /** Triton objects a clean-up found were not the CN's and left alone, by kind. */
  get leftAlone(): Record<string, number> {
    return this.owned.leftAlone.snapshot();
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
          return this.nics.drawLocalPair(streams);
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

  /** One CN, marked as being created from the moment its uuid is drawn until it runs (or is undone). */
  private async createOne(req: CreateRequest, plan: CnPlan): Promise<CreatedServer> {
    const claim: { release?: () => void } = {};
    try {
      return await this.createClaimed(req, plan, claim);
    } finally {
      claim.release?.();
    }
  }

  private async createClaimed(req: CreateRequest, plan: CnPlan, claim: { release?: () => void }): Promise<CreatedServer> {
    const { config, fleet, log } = this.o;
    const { profile, streams } = plan;
    const placement = mergePlacement(profile.placement, req.placement);
    // A headnode boots from its own disk: its admin NIC comes from NAPI directly, never by PXE.
    const viaBooter = this.o.firstBoot !== undefined && !req.headnode && profile.headnode !== true;
    let uuid = '';
    for (let attempt = 1; ; attempt++) {
      const { admin: adminMac, extra: extraMac } = await this.nics.freeMacPair(attempt === 1 ? plan.firstPair : undefined, streams);
      uuid = req.uuid ?? serverUuidFor(adminMac, streams.uuid);
      claim.release?.();
      claim.release = await this.claimCreation(uuid);
      if (req.uuid && fleet.get(uuid)) throw new MockcloudError('Conflict', `server ${uuid} already exists`);
      await beginServerCreation(config.dataDir, { uuid, startedAt: new Date().toISOString(), napiMacs: this.napi ? [adminMac] : [] });
      let adminIp = '';
      try {
        if (!viaBooter) adminIp = await this.nics.allocateAdminNic(adminMac);
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
   * Mark `uuid` as being created. A removal of it still running is waited for; one that could
   * not finish (the uuid is "deleting") refuses the creation: its clean-up would take the new
   * CN's NICs, which belong to the same uuid. Returns the release of the mark.
   */
  private async claimCreation(uuid: string): Promise<() => void> {
    for (;;) {
      const removal = this.removals.running(uuid);
      if (!removal) break;
      await removal.catch(() => undefined);
    }
    if (this.creating.has(uuid)) throw new MockcloudError('Conflict', `server ${uuid} is already being created`);
    if (this.removals.isDeleting(uuid) || (await isServerDeleting(this.o.config.dataDir, uuid))) {
      throw new MockcloudError('Conflict', `server ${uuid} is being deleted and its clean-up is not finished; run delete-servers ${uuid} first`);
    }
    if (this.creating.has(uuid) || this.removals.running(uuid)) return this.claimCreation(uuid);
    let release!: () => void;
    this.creating.set(uuid, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.creating.delete(uuid);
      release();
    };
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
    return this.createOne(req, { profile: this.profiles.get(undefined), streams, firstPair: this.nics.drawLocalPair(streams) });
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
        // Only this daemon's mock CN's record is changed (src/common/ownership.ts).
        const record = await this.owned.checkServerRecord(uuid, 'its placement');
        if (record !== 'ours') {
          const err = new MockcloudError('PreconditionFailed', record === 'absent' ? `CNAPI has no server ${uuid}` : `CNAPI's server ${uuid} is not this daemon's mock CN (${record}); its placement is left alone`);
          refused.add(err);
          throw err;
        }
        const res = await this.o.http.request({ method: 'POST', url: `${this.cnapi}/servers/${uuid}`, body });
        if (res.statusCode < 300) return;
        const err = answerError('CNAPI', `POST /servers/${uuid}`, res);
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
      if (this.napi) await withCleanupRetries(this.o.stopped, () => this.owned.releaseNic(adminMac, adminNicOwners(this.o.config.adminUuid, uuid)));
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
    for (const mac of macs) await withCleanupRetries(this.o.stopped, () => this.owned.releaseNic(mac, adminNicOwners(this.o.config.adminUuid, uuid)));
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
   * Remove a CN everywhere (server-removal.ts): once a creation of the uuid in flight ended.
   * A uuid that is already "deleting" is finished the same way.
   */
  remove(uuid: string): Promise<RemoveResult> {
    return this.removals.remove(uuid);
  }

  /** CNs removed but not yet cleaned up in Triton (kept as `.deleting-<uuid>`). */
  get deletingServers(): string[] {
    return this.removals.deletingServers;
  }

  /** Finish the removals an earlier run left (`.deleting-<uuid>` dirs found at start). */
  resumeRemovals(uuids: readonly string[]): Promise<void> {
    return this.removals.resumeRemovals(uuids);
  }
}

/** What create() drew for one CN before the parallel part. */
interface CnPlan {
  profile: HardwareProfile;
  streams: CnStreams;
  firstPair?: { admin: string; extra: string };
}

