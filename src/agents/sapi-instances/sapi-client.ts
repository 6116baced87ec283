/**
 * The SAPI calls an agent's install makes to adopt its instance (sdc-cn-agent
 * lib/backends/common.js adoptInstanceInSapi; the agents' npm/postinstall.sh
 * adopt_instance_if_necessary), and the delete sdcadm makes when it removes an instance, all
 * through the daemon's shared HTTP client. Bulk work takes the client's background lane.
 */
import { HttpStatusError, type JsonHttpClient } from '../../common/http-client.js';

/** sdcadm's Accept-Version: type=agent objects are only listed (and typed) from 2.0.0 on. */
const HEADERS = { 'accept-version': '~2' };

export interface AgentInstance {
  /** The agent's name: its SAPI service's name. */
  name: string;
  /** The instance uuid (the agent's instance_uuid file). */
  uuid: string;
  serverUuid: string;
  imageUuid?: string;
}

/** Agent service uuids by name; `null` where SAPI has more than one service of that name. */
export type AgentServices = Map<string, string | null>;

export class SapiClient {
  constructor(
    private readonly http: JsonHttpClient,
    private readonly url: string,
  ) {}

  /** `GET /services?type=agent`: one request for every agent's service. */
  async agentServices(background: boolean): Promise<AgentServices> {
    const res = await this.http.call<{ uuid?: unknown; name?: unknown }[]>({
      method: 'GET',
      url: `${this.url}/services?type=agent`,
      headers: HEADERS,
      background,
    });
    const out: AgentServices = new Map();
    for (const svc of Array.isArray(res.body) ? res.body : []) {
      if (typeof svc.name !== 'string' || typeof svc.uuid !== 'string') continue;
      out.set(svc.name, out.has(svc.name) ? null : svc.uuid);
    }
    return out;
  }

  /** The uuids of a service's instances (`GET /instances?service_uuid=`). */
  async instanceUuids(serviceUuid: string): Promise<Set<string>> {
    const res = await this.http.call<{ uuid?: unknown }[]>({
      method: 'GET',
      url: `${this.url}/instances?service_uuid=${encodeURIComponent(serviceUuid)}`,
      headers: HEADERS,
      background: true,
      timeoutMs: 60_000,
    });
    const out = new Set<string>();
    for (const inst of Array.isArray(res.body) ? res.body : []) if (typeof inst.uuid === 'string') out.add(inst.uuid);
    return out;
  }

  /** Whether SAPI has the instance (`GET /instances/:uuid`: 200 or 404). */
  async exists(uuid: string, background: boolean): Promise<boolean> {
    return (await this.get(uuid, background)) !== undefined;
  }

  /** The instance (`GET /instances/:uuid`), or undefined on a 404. */
  async get(uuid: string, background: boolean): Promise<Record<string, unknown> | undefined> {
    const url = `${this.url}/instances/${encodeURIComponent(uuid)}`;
    const res = await this.http.request<Record<string, unknown>>({ method: 'GET', url, headers: HEADERS, background });
    if (res.statusCode === 404) return undefined;
    if (res.statusCode >= 200 && res.statusCode < 300) return typeof res.body === 'object' && res.body !== null ? res.body : {};
    throw new HttpStatusError(res.statusCode, res.body, { method: 'GET', url });
  }

  /**
   * AdoptInstance: `POST /instances` with `exists: true` under the agent's service, as
   * cn-agent posts it, with RFD 82's `params.server_uuid` and `params.image_uuid`.
   */
  async adopt(inst: AgentInstance, serviceUuid: string, background: boolean): Promise<void> {
    await this.http.call({
      method: 'POST',
      url: `${this.url}/instances`,
      headers: HEADERS,
      background,
      body: {
        exists: true,
        name: inst.name,
        service_uuid: serviceUuid,
        uuid: inst.uuid,
        params: { server_uuid: inst.serverUuid, ...(inst.imageUuid ? { image_uuid: inst.imageUuid } : {}) },
      },
    });
  }

  /** `DELETE /instances/:uuid`; true when deleted, false when SAPI had no such instance. The caller checked it is its. */
  async delete(uuid: string): Promise<boolean> {
    const url = `${this.url}/instances/${encodeURIComponent(uuid)}`;
    const res = await this.http.request({ method: 'DELETE', url, headers: HEADERS, background: true });
    if (res.statusCode === 404) return false;
    if (res.statusCode >= 200 && res.statusCode < 300) return true;
    throw new HttpStatusError(res.statusCode, res.body, { method: 'DELETE', url });
  }
}
