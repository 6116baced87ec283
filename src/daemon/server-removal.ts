/**
 * Removing a mock CN everywhere (the control API's DELETE /servers/:uuid), as the original
 * delete-server tool did (cn-agent-spec §6): the CN stops and its dir becomes
 * `.deleting-<uuid>`; VMAPI marks its VMs destroyed, NAPI releases its NICs and its VMs' NICs,
 * CNAPI forgets it, each call retried with backoff and behind its ownership check
 * (owned-cleanup.ts); SAPI its agent instances (the SAPI plug-in retries those on its own: a
 * warning, not a failure); only then do its files go. What could not be cleaned up keeps the CN
 * "deleting": the removal fails, and the next start (or the next delete of that uuid) finishes
 * it. ServerFactory (server-factory.ts) owns one of these and asks it before a creation of a uuid.
 */
import { promises as fsp } from 'node:fs';
import { MockcloudError, toMockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { NicOwner } from '../common/ownership.js';
import { readAgents } from '../mockcn/agents-dir.js';
import { deletingDir, pathsUnder } from '../mockcn/layout.js';
import { finishServerRemoval, isServerDeleting, markServerDeleting } from '../mockcn/server-dir.js';
import { adminNicOf, readSysinfoFile } from '../mockcn/sysinfo-file.js';
import { isHeadnodeSysinfo } from '../mockcn/sysinfo-template.js';
import type { AgentRecord, MockCn } from '../mockcn/types.js';
import { normalizeMac } from '../vmadm/nics.js';
import { mapLimit } from './concurrency.js';
import type { DaemonConfig } from './config.js';
import type { Fleet } from './fleet.js';
import { adminNicOwners, withCleanupRetries, type OwnedCleanup } from './owned-cleanup.js';

export interface RemoveResult {
  uuid: string;
  /** The VMs that went with it (destroyed in VMAPI, NICs released in NAPI); absent when none. */
  vms?: string[];
  warnings: string[];
}

export interface ServerRemovalsOptions {
  config: DaemonConfig;
  fleet: Fleet;
  log: Logger;
  countError: (kind: string) => void;
  /** Every Triton delete and update of a clean-up, behind its ownership check. */
  owned: OwnedCleanup;
  /** A creation of `uuid` running now: a removal of it waits for its end. */
  creation: (uuid: string) => Promise<unknown> | undefined;
  /** After a CN's dir is gone (e.g. forget its loopback agent IP). */
  onRemoved?: ((uuid: string) => Promise<void> | void) | undefined;
  /** Delete the CN's agent instances from SAPI (RFD 82); resolves with warnings. */
  releaseAgentInstances?: ((cn: Pick<MockCn, 'uuid' | 'agents'>) => Promise<string[]>) | undefined;
  /** The daemon is stopping: clean-up retries stop waiting. */
  stopped?: (() => boolean) | undefined;
}

export class ServerRemovals {
  /** Removed CNs whose clean-up in Triton is not done (`.deleting-<uuid>` on disk). */
  private readonly deleting = new Set<string>();
  /** Clean-ups running, by uuid. */
  private readonly removing = new Map<string, Promise<RemoveResult>>();

  constructor(private readonly o: ServerRemovalsOptions) {}

  /** The clean-up of `uuid` running now, if any. */
  running(uuid: string): Promise<RemoveResult> | undefined {
    return this.removing.get(uuid);
  }

  /** Whether `uuid` was removed and its clean-up is not finished (known to this run). */
  isDeleting(uuid: string): boolean {
    return this.deleting.has(uuid);
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
    // A creation of this uuid in flight finishes first (whole, or undone): then it is removed.
    const creation = this.o.creation(uuid);
    if (creation) await creation;
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
        await withCleanupRetries(this.o.stopped, fn);
      } catch (err) {
        failures.push(`${what}: ${toMockcloudError(err).message}`);
      }
    };
    // CNAPI's record goes meanwhile; NAPI waits for VMAPI, which names the VMs whose NICs go too.
    // Each call checks that what it removes is the CN's (owned-cleanup.ts).
    const cnapiDone = config.urls.cnapi ? step('CNAPI', () => this.o.owned.deleteServerRecord(uuid)) : Promise.resolve();
    if (config.urls.vmapi) await step('VMAPI', () => this.o.owned.destroyVmsOn(uuid, vmUuids));
    if (config.urls.napi) {
      const nics = new Map<string, NicOwner[]>();
      if (adminMac) nics.set(normalizeMac(adminMac), adminNicOwners(config.adminUuid, uuid));
      const owners: NicOwner[] = [{ uuid, type: 'server' }, ...[...vmUuids].map((vm): NicOwner => ({ uuid: vm, type: 'zone', cn: uuid }))];
      for (const owner of owners) {
        await step('NAPI', async () => {
          for (const mac of await this.o.owned.nicsOf(owner)) {
            const key = normalizeMac(mac);
            nics.set(key, [...(nics.get(key) ?? []), owner]);
          }
        });
      }
      await Promise.all([...nics].map(([mac, who]) => step('NAPI', async () => void (await this.o.owned.releaseNic(mac, who)))));
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
}
