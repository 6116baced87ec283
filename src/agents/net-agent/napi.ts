/**
 * The NAPI calls net-agent makes (consumers-spec §4.2), over the daemon's shared HTTP client.
 * NIC paths use the colon-free MAC, as sdc-clients does; every NIC answer's `Etag` is kept so a
 * delete can be conditional.
 */
import type { HttpRequest, HttpResponse, JsonHttpClient } from '../../common/http-client.js';
import { HttpStatusError } from '../../common/http-client.js';
import { macPath, type NapiNic } from './fields.js';

export interface NicAnswer {
  nic: NapiNic;
  etag: string | undefined;
}

export type DeleteOutcome = 'deleted' | 'gone' | 'etag-mismatch';

export class NapiCalls {
  /** Requests by kind, for `mockcloud status`. */
  readonly counts = { get: 0, create: 0, update: 0, delete: 0, network: 0 };

  constructor(
    private readonly http: JsonHttpClient,
    readonly baseUrl: string,
    private readonly timeoutMs: number,
  ) {}

  /** GET /nics/<mac>: the NIC, or null when NAPI has none. */
  async getNic(mac: string, userAgent: string): Promise<NicAnswer | null> {
    this.counts.get++;
    const res = await this.send({ method: 'GET', url: `${this.baseUrl}/nics/${macPath(mac)}` }, userAgent);
    if (res.statusCode === 404) return null;
    return this.nicAnswer(res, 'GET', `/nics/${macPath(mac)}`);
  }

  /** POST /nics. */
  async createNic(body: Record<string, unknown>, userAgent: string): Promise<NicAnswer> {
    this.counts.create++;
    const res = await this.send({ method: 'POST', url: `${this.baseUrl}/nics`, body }, userAgent);
    return this.nicAnswer(res, 'POST', '/nics');
  }

  /** PUT /nics/<mac>: the updated NIC, or null when NAPI has none (any more). */
  async updateNic(mac: string, body: Record<string, unknown>, userAgent: string): Promise<NicAnswer | null> {
    this.counts.update++;
    const res = await this.send({ method: 'PUT', url: `${this.baseUrl}/nics/${macPath(mac)}`, body }, userAgent);
    if (res.statusCode === 404) return null;
    return this.nicAnswer(res, 'PUT', `/nics/${macPath(mac)}`);
  }

  /** DELETE /nics/<mac> with `If-Match: <etag>`. */
  async deleteNic(mac: string, etag: string, userAgent: string): Promise<DeleteOutcome> {
    this.counts.delete++;
    const url = `${this.baseUrl}/nics/${macPath(mac)}`;
    const res = await this.http.request({
      method: 'DELETE',
      url,
      headers: { 'user-agent': userAgent, 'if-match': etag },
      timeoutMs: this.timeoutMs,
      background: true,
    });
    if (res.statusCode === 404) return 'gone';
    if (res.statusCode === 412) return 'etag-mismatch';
    if (res.statusCode < 200 || res.statusCode >= 300) throw new HttpStatusError(res.statusCode, res.body, { method: 'DELETE', url });
    return 'deleted';
  }

  /** GET /networks/<uuid>: the network, or null when NAPI has none. */
  async getNetwork(uuid: string, userAgent: string): Promise<Record<string, unknown> | null> {
    this.counts.network++;
    const url = `${this.baseUrl}/networks/${uuid}`;
    const res = await this.send({ method: 'GET', url }, userAgent);
    if (res.statusCode === 404) return null;
    if (res.statusCode < 200 || res.statusCode >= 300) throw new HttpStatusError(res.statusCode, res.body, { method: 'GET', url });
    if (!isRecord(res.body)) throw new HttpStatusError(502, { code: 'BadGateway', message: 'network answer is not an object' }, { method: 'GET', url });
    return res.body;
  }

  private send(req: HttpRequest, userAgent: string): Promise<HttpResponse<unknown>> {
    return this.http.request({ ...req, headers: { 'user-agent': userAgent }, timeoutMs: this.timeoutMs, background: true });
  }

  private nicAnswer(res: HttpResponse<unknown>, method: string, path: string): NicAnswer {
    const url = `${this.baseUrl}${path}`;
    if (res.statusCode < 200 || res.statusCode >= 300) throw new HttpStatusError(res.statusCode, res.body, { method, url });
    if (!isRecord(res.body) || typeof res.body.mac !== 'string') {
      throw new HttpStatusError(502, { code: 'BadGateway', message: 'NIC answer has no mac' }, { method, url });
    }
    const etag = res.headers.etag;
    return { nic: res.body as NapiNic, etag: typeof etag === 'string' && etag ? etag : undefined };
  }
}

/** `net-agent/<ver> (node/<ver>) server/<cn>`, as the real agent sends it. */
export function netAgentUserAgent(version: string, serverUuid?: string): string {
  return `net-agent/${version} (node/${process.versions.node})${serverUuid ? ` server/${serverUuid}` : ''}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
