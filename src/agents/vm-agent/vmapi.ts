/**
 * The three VMAPI calls vm-agent makes (consumers-spec §4.1), over the daemon's shared HTTP
 * client. Each call carries the calling CN's User-Agent.
 */
import type { HttpRequest, JsonHttpClient } from '../../common/http-client.js';
import { HttpStatusError } from '../../common/http-client.js';
import { MockcloudError } from '../../common/errors.js';

export type VmapiVm = Record<string, unknown>;

export class VmapiCalls {
  constructor(
    private readonly http: JsonHttpClient,
    private readonly baseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * `GET /vms?server_uuid=<cn>&state=active`, every page (VMAPI caps a page at 1000; the
   * original read only the first).
   */
  async listActive(serverUuid: string, userAgent: string, pageLimit: number): Promise<VmapiVm[]> {
    const all: VmapiVm[] = [];
    // Bounded: a VMAPI that keeps answering full pages cannot loop us forever.
    for (let page = 0; page < 10_000; page++) {
      const offset = page * pageLimit;
      const query = `server_uuid=${serverUuid}&state=active&limit=${pageLimit}&offset=${offset}`;
      const res = await this.call<unknown>({ method: 'GET', url: `${this.baseUrl}/vms?${query}` }, userAgent);
      if (!Array.isArray(res)) {
        throw new MockcloudError('BadGateway', `VMAPI GET /vms?${query}: expected an array, got ${typeof res}`);
      }
      for (const vm of res) if (vm && typeof vm === 'object') all.push(vm as VmapiVm);
      if (res.length < pageLimit) return all;
    }
    return all;
  }

  /** `PUT /vms?server_uuid=<cn>` with `{vms: {uuid: vm}}`. */
  async putVms(serverUuid: string, vms: Record<string, unknown>, userAgent: string): Promise<void> {
    await this.call({ method: 'PUT', url: `${this.baseUrl}/vms?server_uuid=${serverUuid}`, body: { vms } }, userAgent);
  }

  /** `PUT /vms/<uuid>` with the full VM. */
  async putVm(vm: { uuid: string; [key: string]: unknown }, userAgent: string): Promise<void> {
    await this.call({ method: 'PUT', url: `${this.baseUrl}/vms/${vm.uuid}`, body: vm }, userAgent);
  }

  private async call<T>(req: HttpRequest, userAgent: string): Promise<T> {
    const res = await this.http.request<T>({ ...req, headers: { 'user-agent': userAgent }, timeoutMs: this.timeoutMs, background: true });
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw new HttpStatusError(res.statusCode, res.body, { method: req.method, url: req.url });
    }
    return res.body;
  }
}

/** `vm-agent/<ver> (node/<ver>) server/<cn>`, as the real agent sends it. */
export function vmAgentUserAgent(version: string, serverUuid: string): string {
  return `vm-agent/${version} (node/${process.versions.node}) server/${serverUuid}`;
}
