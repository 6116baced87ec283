/**
 * VMAPI's calls to its peers over HTTP, the way its workflows make them: CNAPI (task
 * endpoints, `GET /tasks/:id/wait`, `/allocate`, servers), NAPI (networks, NIC
 * provisioning and deletion), IMGAPI (image manifests) and PAPI (packages). Every error from
 * a peer keeps its status and restify body so callers can relay it.
 */
import { HttpStatusError, type JsonHttpClient } from '../../common/http-client.js';
import { MockcloudError, type ErrorCode, type FieldError } from '../../common/errors.js';

export type Obj = Record<string, unknown>;

export interface CnapiTask {
  id: string;
  status: 'active' | 'complete' | 'failure';
  history?: { name: string; event?: Obj }[];
}

/** How long a workflow step waits on a CNAPI task (CNAPI's own wait maximum). */
const TASK_WAIT_S = 3600;

export class Peers {
  constructor(
    private readonly http: JsonHttpClient,
    readonly urls: { cnapi: string; napi: string; imgapi: string; papi?: string; fwapi?: string },
  ) {}

  private async json<T = Obj>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, reqId?: string, timeoutMs?: number): Promise<T> {
    const headers: Record<string, string> = {};
    if (reqId) headers['x-request-id'] = reqId;
    const res = await this.http.call<T>({ method, url, body, headers, timeoutMs });
    return res.body;
  }

  // ---- FWAPI

  /** sdc-clients FWAPI createUpdate: the update's uuid; throws when there is no FWAPI. */
  async fwapiUpdate(update: Obj, reqId: string): Promise<string> {
    if (!this.urls.fwapi) throw new Error('no FWAPI');
    const res = await this.json<{ update_uuid?: string }>('POST', `${this.urls.fwapi}/updates`, update, reqId, 10_000);
    return String(res?.update_uuid);
  }

  // ---- CNAPI

  /** zoneAction: call a CNAPI VM/server task endpoint; returns the task id. */
  async cnapiTask(method: 'POST' | 'PUT' | 'DELETE', path: string, body: unknown, reqId: string): Promise<string> {
    const res = await this.json<{ id?: string }>(method, `${this.urls.cnapi}${path}`, method === 'DELETE' ? undefined : body, reqId, 10_000);
    if (!res || typeof res.id !== 'string') throw new Error(`CNAPI ${path} returned no task id`);
    return res.id;
  }

  /** waitTask: `GET /tasks/:id/wait`, polling `/tasks/:id` on a 404 as the workflows do. */
  async waitTask(id: string, reqId: string): Promise<CnapiTask> {
    const deadline = Date.now() + TASK_WAIT_S * 1000;
    for (;;) {
      let task: CnapiTask;
      try {
        task = await this.json<CnapiTask>('GET', `${this.urls.cnapi}/tasks/${id}/wait?timeout=${TASK_WAIT_S}`, undefined, reqId, (TASK_WAIT_S + 60) * 1000);
      } catch (err) {
        if (!(err instanceof HttpStatusError && err.statusCode === 404)) throw err;
        task = await this.json<CnapiTask>('GET', `${this.urls.cnapi}/tasks/${id}`, undefined, reqId);
      }
      if (task.status !== 'active') return task;
      if (Date.now() > deadline) throw new Error(`task ${id} did not finish`);
    }
  }

  getServer(uuid: string, reqId?: string): Promise<Obj> {
    return this.json('GET', `${this.urls.cnapi}/servers/${encodeURIComponent(uuid)}`, undefined, reqId);
  }

  allocate(payload: Obj, reqId: string): Promise<{ server: Obj; imgapiPeers?: unknown }> {
    return this.json('POST', `${this.urls.cnapi}/allocate`, payload, reqId);
  }

  capacity(servers: string[], reqId: string): Promise<Obj> {
    return this.json('POST', `${this.urls.cnapi}/capacity`, { servers }, reqId);
  }

  /** CNAPI's copy of an image on a server (`GET /servers/:uuid/images/:uuid`). */
  getServerImage(serverUuid: string, imageUuid: string, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.cnapi}/servers/${serverUuid}/images/${imageUuid}`, undefined, reqId);
  }

  getVmProc(serverUuid: string, vmUuid: string, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.cnapi}/servers/${serverUuid}/vms/${vmUuid}/proc`, undefined, reqId, 70_000);
  }

  // ---- CNAPI waitlist (sdc-clients CNAPI waitlistTicket*)

  /** Create a ticket; answers `{uuid, queue}` as CNAPI does. */
  createTicket(serverUuid: string, ticket: Obj, reqId: string): Promise<{ uuid: string; queue: Obj[] }> {
    return this.json('POST', `${this.urls.cnapi}/servers/${serverUuid}/tickets`, ticket, reqId);
  }

  getTicket(uuid: string, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.cnapi}/tickets/${uuid}`, undefined, reqId);
  }

  /** Resolves once the ticket is active (CNAPI holds the request up to an hour). */
  async waitTicket(uuid: string, reqId: string): Promise<void> {
    await this.json('GET', `${this.urls.cnapi}/tickets/${uuid}/wait`, undefined, reqId, 3660_000);
  }

  async releaseTicket(uuid: string, reqId: string): Promise<void> {
    await this.json('PUT', `${this.urls.cnapi}/tickets/${uuid}/release`, {}, reqId);
  }

  /** CNAPI VmLoad; undefined when the CN says the VM does not exist (404). */
  async loadVm(serverUuid: string, vmUuid: string, reqId: string): Promise<Obj | undefined> {
    try {
      return await this.json('GET', `${this.urls.cnapi}/servers/${serverUuid}/vms/${vmUuid}`, undefined, reqId, 70_000);
    } catch (err) {
      if (err instanceof HttpStatusError && err.statusCode === 404) return undefined;
      throw err;
    }
  }

  // ---- PAPI

  /** sdc-clients PAPI `get` (VMAPI's lib/apis/papi.js getPackage); undefined without a PAPI. */
  getPackage(uuid: string, reqId: string): Promise<Obj> | undefined {
    if (!this.urls.papi) return undefined;
    return this.json('GET', `${this.urls.papi}/packages/${encodeURIComponent(uuid)}`, undefined, reqId);
  }

  // ---- NAPI

  getNetwork(idOrName: string, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.napi}/networks/${encodeURIComponent(idOrName)}`, undefined, reqId);
  }

  listNetworks(query: Record<string, string>, reqId: string): Promise<Obj[]> {
    return this.json('GET', `${this.urls.napi}/networks?${new URLSearchParams(query)}`, undefined, reqId);
  }

  listNics(query: Record<string, string>, reqId: string): Promise<Obj[]> {
    return this.json('GET', `${this.urls.napi}/nics?${new URLSearchParams(query)}`, undefined, reqId);
  }

  getNetworkPool(uuid: string, query: Record<string, string>, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.napi}/network_pools/${encodeURIComponent(uuid)}?${new URLSearchParams(query)}`, undefined, reqId);
  }

  listNetworkPools(query: Record<string, string>, reqId: string): Promise<Obj[]> {
    return this.json('GET', `${this.urls.napi}/network_pools?${new URLSearchParams(query)}`, undefined, reqId);
  }

  getNetworkFor(uuid: string, query: Record<string, string>, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.napi}/networks/${encodeURIComponent(uuid)}?${new URLSearchParams(query)}`, undefined, reqId);
  }

  updateNic(mac: string, params: Obj, reqId: string): Promise<Obj> {
    return this.json('PUT', `${this.urls.napi}/nics/${mac.replace(/:/g, '')}`, params, reqId);
  }

  getNic(mac: string, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.napi}/nics/${mac.replace(/:/g, '')}`, undefined, reqId);
  }

  provisionNic(networkUuid: string, params: Obj, reqId: string): Promise<Obj> {
    return this.json('POST', `${this.urls.napi}/networks/${networkUuid}/nics`, params, reqId);
  }

  /** Delete a NIC; a NIC that is already gone counts as deleted (as the workflows treat it). */
  async deleteNic(mac: string, reqId: string): Promise<void> {
    try {
      await this.json('DELETE', `${this.urls.napi}/nics/${mac.replace(/:/g, '')}`, undefined, reqId);
    } catch (err) {
      if (err instanceof HttpStatusError && err.statusCode === 404) return;
      throw err;
    }
  }

  // ---- IMGAPI

  /** IMGAPI GetImage; a 404 is thrown like any other error. */
  getImage(uuid: string, reqId: string): Promise<Obj> {
    return this.json('GET', `${this.urls.imgapi}/images/${encodeURIComponent(uuid)}`, undefined, reqId);
  }
}

/**
 * A peer's error as VMAPI relays it to its own caller: the peer's status and body
 * (restify passes errors from sdc-clients through), or 500 for transport failures.
 */
export function relay(err: unknown): MockcloudError {
  if (err instanceof MockcloudError) return err;
  if (err instanceof HttpStatusError) return new PeerError(err);
  return new MockcloudError('InternalError', err instanceof Error ? err.message : String(err), { cause: err });
}

/**
 * A peer's error relayed whole: its HTTP status (e.g. NAPI's 507) and its body, extra keys
 * included (VMAPI's formatter sends a restify client error's `body` as it came).
 */
export class PeerError extends MockcloudError {
  private readonly peerBody: Record<string, unknown> | undefined;

  constructor(err: HttpStatusError) {
    const body = (err.body ?? {}) as { code?: unknown; message?: unknown; errors?: unknown };
    const code = statusToCode(err.statusCode);
    super(code, typeof body.message === 'string' ? body.message : err.message, {
      restCode: typeof body.code === 'string' ? body.code : code,
      ...(Array.isArray(body.errors) ? { errors: body.errors as FieldError[] } : {}),
      cause: err,
    });
    this.peerBody = err.body && typeof err.body === 'object' ? (err.body as Record<string, unknown>) : undefined;
    Object.defineProperty(this, 'statusCode', { value: err.statusCode, enumerable: true });
  }

  override toBody(): { code: string; message: string } {
    return (this.peerBody as { code: string; message: string } | undefined) ?? super.toBody();
  }
}

function statusToCode(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'BadRequest';
    case 404:
      return 'ResourceNotFound';
    case 409:
      return 'Conflict';
    case 412:
      return 'PreconditionFailed';
    case 422:
      return 'InvalidParameters';
    case 503:
      return 'ServiceUnavailable';
    default:
      return status >= 500 ? 'InternalError' : 'BadRequest';
  }
}
