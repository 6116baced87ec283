/**
 * IMGAPI's write calls, as a CN makes them when it publishes an image: imgadm's publishImage
 * for machine_create_image (AdminImportImage, AddImageFile, ActivateImage, DeleteImage on a
 * failure) and docker-build.js's layer upload for docker_build (the same, with UpdateImage
 * between the file and the activation). Each goes through the daemon's shared client with the
 * task's x-request-id; a non-2xx answer rejects with HttpStatusError, which each caller turns
 * into its own tool's error.
 */
import { HttpStatusError, type JsonHttpClient } from '../../../common/http-client.js';

export interface ImgapiWriterOptions {
  http: JsonHttpClient;
  imgapiUrl: string;
  reqId: string;
  /** The task's signal: a cancelled task stops its upload. */
  signal?: AbortSignal;
}

/** Deadline of a JSON call (import, update, activate, delete). */
const CALL_TIMEOUT_MS = 60_000;

export class ImgapiWriter {
  private readonly base: string;

  constructor(private readonly o: ImgapiWriterOptions) {
    this.base = o.imgapiUrl.replace(/\/+$/, '');
  }

  /** AdminImportImage: an unactivated image under `uuid`. */
  importImage(uuid: string, manifest: Record<string, unknown>): Promise<unknown> {
    return this.post(`/images/${uuid}?action=import`, manifest);
  }

  /**
   * AddImageFile: `data` as sdc-clients' addImageFile sends it (octet-stream, Content-Length),
   * with `query` (compression, sha1, size); resolves with IMGAPI's answer, the image.
   */
  async addFile(uuid: string, query: Record<string, string>, data: Buffer, timeoutMs: number): Promise<unknown> {
    const res = await this.o.http.request({
      method: 'PUT',
      url: `${this.base}/images/${uuid}/file?${new URLSearchParams(query)}`,
      body: data,
      headers: { 'x-request-id': this.o.reqId },
      timeoutMs,
      ...(this.o.signal ? { signal: this.o.signal } : {}),
    });
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw new HttpStatusError(res.statusCode, res.body, { method: 'PUT', url: `${this.base}/images/${uuid}/file` });
    }
    return res.body;
  }

  /** UpdateImage (`?action=update`). */
  updateImage(uuid: string, fields: Record<string, unknown>): Promise<unknown> {
    return this.post(`/images/${uuid}?action=update`, fields);
  }

  /** ActivateImage: resolves with the active image. */
  activate(uuid: string): Promise<unknown> {
    return this.post(`/images/${uuid}?action=activate`, {});
  }

  /** DeleteImage: what a failed publish leaves behind. */
  async deleteImage(uuid: string): Promise<void> {
    await this.o.http.call({ method: 'DELETE', url: `${this.base}/images/${uuid}`, headers: { 'x-request-id': this.o.reqId }, timeoutMs: CALL_TIMEOUT_MS });
  }

  private async post(path: string, body: unknown): Promise<unknown> {
    const res = await this.o.http.call({
      method: 'POST',
      url: `${this.base}${path}`,
      body,
      headers: { 'x-request-id': this.o.reqId },
      timeoutMs: CALL_TIMEOUT_MS,
    });
    return res.body;
  }
}
