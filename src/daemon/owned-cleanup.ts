/**
 * The Triton calls that remove a deleted CN's traces (ServerFactory's clean-up and undone
 * creations), each behind the check that what it removes is the CN's (src/common/ownership.ts):
 *
 *   NAPI    every NIC is read by its MAC first (`GET /nics/<mac>`) and deleted only while it
 *           belongs to the CN (`server`), to one of its VMs (`zone`, on this CN) or, for the
 *           admin NIC of a creation, to the admin user (`other`), with `If-Match` of the etag
 *           read; a list by `belongs_to_uuid` only names candidates;
 *   VMAPI   a VM is marked destroyed only while VMAPI places it on the CN (`server_uuid`);
 *   CNAPI   the server record goes only when it is this mock CN's (cnapiServerNotOurs).
 *
 * What fails a check is left alone, counted (`leftAlone`) and logged at WARN; it never fails
 * the removal: it is not the CN's to remove.
 */
import type { JsonHttpClient } from '../common/http-client.js';
import { MockcloudError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { retryWithBackoff } from '../common/retry.js';
import { cnapiServerNotOurs, LeftAlone, nicBelongsTo, vmIsOnServer, type NicOwner } from '../common/ownership.js';

export interface OwnedCleanupOptions {
  http: JsonHttpClient;
  log: Logger;
  urls: { napi?: string | undefined; vmapi?: string | undefined; cnapi?: string | undefined };
  /** This daemon's id (the `Mockcloud Daemon` of its CNs' sysinfo). */
  daemonId: () => string | undefined;
  countError: (kind: string) => void;
}

/** VMs asked for per page. */
const VM_PAGE = 1000;
/** Pages of one CN's VMs at most: a VMAPI that ignores `server_uuid` cannot keep the clean-up paging forever. */
const MAX_VM_PAGES = 1000;

type Obj = Record<string, unknown>;

export class OwnedCleanup {
  readonly leftAlone = new LeftAlone();

  constructor(private readonly o: OwnedCleanupOptions) {}

  /**
   * The MACs of the NICs NAPI lists for `owner`, those that really are its (the others, from a
   * NAPI that ignored the filter, are counted and named in one WARN line).
   */
  async nicsOf(owner: NicOwner): Promise<string[]> {
    const query = `/nics?belongs_to_uuid=${owner.uuid}&belongs_to_type=${owner.type}`;
    const res = await this.napi('GET', query);
    if (res.statusCode >= 300 || !Array.isArray(res.body)) throw answerError('NAPI', `GET ${query}`, res);
    const macs: string[] = [];
    let foreign = 0;
    for (const nic of res.body as Obj[]) {
      if (typeof nic?.mac !== 'string') continue;
      if (nicBelongsTo(nic, [owner])) macs.push(nic.mac);
      else foreign++;
    }
    if (foreign > 0) {
      this.leftAlone.note('napi-nic', foreign);
      this.o.log.warn(
        { owner: owner.uuid, ownerType: owner.type, foreign, listed: res.body.length },
        `NAPI answered ${foreign} NIC(s) of other owners to GET ${query}: left alone (does NAPI ignore the filter?)`,
      );
    }
    return macs;
  }

  /**
   * Delete the NIC of `mac` if NAPI says it belongs to one of `owners`; resolves when it is gone
   * or is not theirs (left alone). Rejects on NAPI failures (the caller retries).
   */
  async releaseNic(mac: string, owners: readonly NicOwner[]): Promise<'deleted' | 'absent' | 'not-ours'> {
    const nicPath = `/nics/${mac.replace(/:/g, '')}`;
    const got = await this.napi('GET', nicPath);
    if (got.statusCode === 404) return 'absent';
    if (got.statusCode >= 300) throw answerError('NAPI', `GET ${nicPath}`, got);
    if (!nicBelongsTo(got.body, owners)) {
      const b = (got.body ?? {}) as Obj;
      this.leftAlone.note('napi-nic');
      this.o.log.warn(
        { mac, napiOwner: b.belongs_to_uuid, napiType: b.belongs_to_type, expected: owners.map((x) => `${x.type}:${x.uuid}`) },
        `NAPI gives NIC ${mac} to ${String(b.belongs_to_type)} ${String(b.belongs_to_uuid)}, not to the server being removed: left alone`,
      );
      return 'not-ours';
    }
    const etag = typeof got.headers.etag === 'string' && got.headers.etag ? got.headers.etag : undefined;
    const res = await this.napi('DELETE', nicPath, etag ? { 'if-match': etag } : undefined);
    if (res.statusCode === 404) return 'absent';
    // Changed since it was read: read (and check) again on the retry.
    if (res.statusCode === 412) throw new MockcloudError('Conflict', `NAPI DELETE ${nicPath}: the NIC changed while it was being released`);
    if (res.statusCode >= 300) throw answerError('NAPI', `DELETE ${nicPath}`, res);
    return 'deleted';
  }

  /**
   * Mark destroyed in VMAPI, as vm-agent tells it a VM went away (`PUT /vms/:uuid` with state
   * destroyed), every VM VMAPI places on `server`: those it lists and those of `vmUuids` (the
   * CN's disk) it has. A VM of `vmUuids` VMAPI places elsewhere (migrated) is left alone and
   * taken out of `vmUuids` (its NICs are not the CN's either); VMAPI's own VMs of the CN are
   * added to it.
   */
  async destroyVmsOn(server: string, vmUuids: Set<string>): Promise<void> {
    const vmapi = this.o.urls.vmapi!;
    const onServer = new Map<string, Obj>();
    let foreign = 0;
    for (let page = 0, offset = 0; page < MAX_VM_PAGES; page++, offset += VM_PAGE) {
      const url = `${vmapi}/vms?server_uuid=${server}&state=active&limit=${VM_PAGE}&offset=${offset}`;
      const res = await this.o.http.request<Obj[]>({ method: 'GET', url });
      if (res.statusCode >= 300 || !Array.isArray(res.body)) throw answerError('VMAPI', `GET /vms?server_uuid=${server}`, res);
      for (const vm of res.body) {
        if (typeof vm?.uuid !== 'string') continue;
        if (vmIsOnServer(vm, server)) onServer.set(vm.uuid, vm);
        else if (!vmUuids.has(vm.uuid)) foreign++;
      }
      if (res.body.length < VM_PAGE) break;
    }
    if (foreign > 0) {
      this.leftAlone.note('vmapi-vm', foreign);
      this.o.log.warn({ server, foreign }, `VMAPI listed ${foreign} VM(s) of other servers for server_uuid=${server}: left alone (does VMAPI ignore the filter?)`);
    }
    for (const u of vmUuids) {
      if (onServer.has(u)) continue;
      // On the CN's disk but not listed: VMAPI may have it destroyed already, elsewhere, or not at all.
      const res = await this.o.http.request<Obj>({ method: 'GET', url: `${vmapi}/vms/${u}` });
      if (res.statusCode === 404) continue;
      if (res.statusCode >= 300) throw answerError('VMAPI', `GET /vms/${u}`, res);
      if (!vmIsOnServer(res.body, server)) {
        vmUuids.delete(u);
        this.leftAlone.note('vmapi-vm');
        this.o.log.warn({ server, vm: u, vmapiServer: res.body?.server_uuid }, `VMAPI places VM ${u} on another server: left alone with its NICs`);
        continue;
      }
      if (res.body.state !== 'destroyed') onServer.set(u, res.body);
    }
    const now = new Date().toISOString();
    for (const [u, vm] of onServer) {
      vmUuids.add(u);
      const res = await this.o.http.request({
        method: 'PUT',
        url: `${vmapi}/vms/${u}`,
        body: { ...vm, state: 'destroyed', zone_state: 'destroyed', destroyed: now, last_modified: now },
      });
      if (res.statusCode >= 300 && res.statusCode !== 404) throw answerError('VMAPI', `PUT /vms/${u}`, res);
    }
  }

  /**
   * Whether CNAPI's record of `uuid` is this daemon's mock CN: 'ours', 'absent' (a 404), or why
   * not (then counted as left alone, and logged). Rejects on CNAPI failures.
   */
  async checkServerRecord(uuid: string, action: string): Promise<'ours' | 'absent' | string> {
    const got = await this.o.http.request({ method: 'GET', url: `${this.o.urls.cnapi!}/servers/${uuid}` });
    if (got.statusCode === 404) return 'absent';
    if (got.statusCode >= 300) throw answerError('CNAPI', `GET /servers/${uuid}`, got);
    const why = cnapiServerNotOurs(got.body, uuid, this.o.daemonId());
    if (!why) return 'ours';
    this.leftAlone.note('cnapi-server');
    this.o.log.warn({ server: uuid }, `CNAPI's server ${uuid} is not this daemon's mock CN (${why}): ${action} left alone`);
    return why;
  }

  /** Delete the CN's CNAPI record if it is this mock CN's; a record that is not is left alone. */
  async deleteServerRecord(uuid: string): Promise<void> {
    if ((await this.checkServerRecord(uuid, 'its record')) !== 'ours') return;
    const res = await this.o.http.request({ method: 'DELETE', url: `${this.o.urls.cnapi!}/servers/${uuid}` });
    if (res.statusCode >= 300 && res.statusCode !== 404) throw answerError('CNAPI', `DELETE /servers/${uuid}`, res);
  }

  private async napi(method: 'GET' | 'DELETE', path: string, headers?: Record<string, string>) {
    try {
      return await this.o.http.request({ method, url: `${this.o.urls.napi}${path}`, ...(headers ? { headers } : {}) });
    } catch (err) {
      this.o.countError('napi');
      throw new MockcloudError('BadGateway', `NAPI ${method} ${path} (${this.o.urls.napi}): ${(err as Error).message}`, { cause: err });
    }
  }
}

export function answerError(service: string, what: string, res: { statusCode: number; body: unknown }): MockcloudError {
  const b = res.body as { code?: string; message?: string } | undefined;
  return new MockcloudError(
    'BadGateway',
    `${service} ${what}: ${res.statusCode}${b?.code ? ` ${b.code}` : ''}${b?.message ? `: ${b.message}` : ''}`,
  );
}

/**
 * Who a CN's admin NIC may belong to in NAPI: the admin user (`other`, as it was made) or,
 * once net-agent claimed it, the CN itself.
 */
export function adminNicOwners(adminUuid: string, uuid: string): NicOwner[] {
  return [
    { uuid: adminUuid, type: 'other' },
    { uuid, type: 'server' },
  ];
}

/** A Triton call of a clean-up: tried again with backoff, unless the daemon is stopping. */
export function withCleanupRetries<T>(stopped: (() => boolean) | undefined, fn: () => Promise<T>): Promise<T> {
  return retryWithBackoff(fn, { attempts: 5, minDelayMs: 100, maxDelayMs: 2000, ...(stopped ? { stopped } : {}) });
}
