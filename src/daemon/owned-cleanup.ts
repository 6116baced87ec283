/**
 * The Triton calls that remove a deleted CN's traces (ServerFactory's clean-up and undone
 * creations), each behind the check that what it removes is the CN's (src/common/ownership.ts):
 *
 *   NAPI    every NIC is read by its MAC first (`GET /nics/<mac>`) and deleted only while it
 *           belongs to the CN (`server`), to one of its VMs (`zone`, on this CN) or, for the
 *           admin NIC of a creation, to the admin user (`other`), with `If-Match` of the etag
 *           read; a list by `belongs_to_uuid` only names candidates;
 *   VMAPI   a VM is read (`GET /vms/<uuid>`) and marked destroyed only while VMAPI places it on
 *           the CN (`server_uuid`), with `If-Match` of the etag read where VMAPI gives one (sdc-vmapi
 *           lib/endpoints/vms.js PutVm does not check it: there the read just before the write is
 *           the check); a list by `server_uuid` only names candidates;
 *   CNAPI   the server record goes only when it is this mock CN's (cnapiServerNotOurs).
 *
 * What fails a check is left alone, counted (`leftAlone`) and logged at WARN; it never fails
 * the removal: it is not the CN's to remove. Every call goes through `call`, so a service that
 * cannot be reached is counted (`countError`, by service) and reported as BadGateway the same way.
 */
import type { HttpResponse, JsonHttpClient } from '../common/http-client.js';
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

/** The services a clean-up calls, as named in errors and in the error counters. */
type Service = 'NAPI' | 'VMAPI' | 'CNAPI';

/** Reads and conditional writes of one VM at most, while VMAPI says it changed in between (412). */
const VM_WRITE_ATTEMPTS = 3;

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
    const res = await this.call('NAPI', 'GET', query);
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
    const got = await this.call('NAPI', 'GET', nicPath);
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
    const res = await this.call('NAPI', 'DELETE', nicPath, ifMatch(got));
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
    const listed = new Set<string>();
    let foreign = 0;
    for (let page = 0, offset = 0; page < MAX_VM_PAGES; page++, offset += VM_PAGE) {
      const query = `/vms?server_uuid=${server}&state=active&limit=${VM_PAGE}&offset=${offset}`;
      const res = await this.call<Obj[]>('VMAPI', 'GET', query);
      if (res.statusCode >= 300 || !Array.isArray(res.body)) throw answerError('VMAPI', `GET /vms?server_uuid=${server}`, res);
      for (const vm of res.body) {
        if (typeof vm?.uuid !== 'string') continue;
        if (vmIsOnServer(vm, server)) listed.add(vm.uuid);
        else if (!vmUuids.has(vm.uuid)) foreign++;
      }
      if (res.body.length < VM_PAGE) break;
    }
    if (foreign > 0) {
      this.leftAlone.note('vmapi-vm', foreign);
      this.o.log.warn({ server, foreign }, `VMAPI listed ${foreign} VM(s) of other servers for server_uuid=${server}: left alone (does VMAPI ignore the filter?)`);
    }
    // Those VMAPI lists and those on the CN's disk (VMAPI may have them destroyed already,
    // elsewhere, or not at all): each is read again, and written only while it is on the CN.
    const now = new Date().toISOString();
    for (const u of new Set([...listed, ...vmUuids])) {
      // A VM VMAPI places elsewhere (migrated) is not the CN's, nor are its NICs.
      if ((await this.destroyVm(u, server, now)) === 'not-ours') vmUuids.delete(u);
      else vmUuids.add(u);
    }
  }

  /**
   * Mark VM `u` destroyed if VMAPI places it on `server`: read, check, then a write conditional
   * on the etag read; a VM that changed meanwhile (412) is read and checked again. Rejects on
   * VMAPI failures, and when it keeps changing (the caller retries).
   */
  private async destroyVm(u: string, server: string, now: string): Promise<'destroyed' | 'absent' | 'not-ours'> {
    const vmPath = `/vms/${u}`;
    for (let attempt = 0; attempt < VM_WRITE_ATTEMPTS; attempt++) {
      const got = await this.call<Obj>('VMAPI', 'GET', vmPath);
      if (got.statusCode === 404) return 'absent';
      if (got.statusCode >= 300) throw answerError('VMAPI', `GET ${vmPath}`, got);
      if (!vmIsOnServer(got.body, server)) {
        this.leftAlone.note('vmapi-vm');
        this.o.log.warn({ server, vm: u, vmapiServer: got.body?.server_uuid }, `VMAPI places VM ${u} on another server: left alone with its NICs`);
        return 'not-ours';
      }
      if (got.body.state === 'destroyed') return 'absent';
      const res = await this.call('VMAPI', 'PUT', vmPath, {
        body: { ...got.body, state: 'destroyed', zone_state: 'destroyed', destroyed: now, last_modified: now },
        ...ifMatch(got),
      });
      if (res.statusCode === 404) return 'absent';
      if (res.statusCode === 412) continue;
      if (res.statusCode >= 300) throw answerError('VMAPI', `PUT ${vmPath}`, res);
      return 'destroyed';
    }
    throw new MockcloudError('Conflict', `VMAPI PUT ${vmPath}: the VM changed each time it was read (${VM_WRITE_ATTEMPTS} times)`);
  }

  /**
   * Whether CNAPI's record of `uuid` is this daemon's mock CN: 'ours', 'absent' (a 404), or why
   * not (then counted as left alone, and logged). Rejects on CNAPI failures.
   */
  async checkServerRecord(uuid: string, action: string): Promise<'ours' | 'absent' | string> {
    const got = await this.call('CNAPI', 'GET', `/servers/${uuid}`);
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
    const res = await this.call('CNAPI', 'DELETE', `/servers/${uuid}`);
    if (res.statusCode >= 300 && res.statusCode !== 404) throw answerError('CNAPI', `DELETE /servers/${uuid}`, res);
  }

  /**
   * One call to `service`: a service that cannot be reached is counted under its name and
   * reported as BadGateway (its answers, whatever their status, are the caller's to judge).
   */
  private async call<T = unknown>(
    service: Service,
    method: 'GET' | 'PUT' | 'DELETE',
    path: string,
    opts: { headers?: Record<string, string>; body?: unknown } = {},
  ): Promise<HttpResponse<T>> {
    const base = this.o.urls[SERVICE_URL[service]];
    try {
      return await this.o.http.request<T>({ method, url: `${base}${path}`, ...opts });
    } catch (err) {
      this.o.countError(SERVICE_URL[service]);
      throw new MockcloudError('BadGateway', `${service} ${method} ${path} (${base}): ${(err as Error).message}`, { cause: err });
    }
  }
}

const SERVICE_URL = { NAPI: 'napi', VMAPI: 'vmapi', CNAPI: 'cnapi' } as const satisfies Record<Service, keyof OwnedCleanupOptions['urls']>;

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

/** The headers of a write conditional on what `read` answered: `If-Match` of its etag, if it gave one. */
function ifMatch(read: HttpResponse<unknown>): { headers?: Record<string, string> } {
  const etag = read.headers.etag;
  return typeof etag === 'string' && etag ? { headers: { 'if-match': etag } } : {};
}
