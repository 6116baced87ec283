/**
 * Reading a request's JSON body at the edge, with a size limit. What CNAPI sends is small
 * (a VM payload is a few KiB); anything past the limit is refused with 413 before it is
 * buffered, malformed JSON with 400, and a body that is not a JSON object with 400.
 */
import type http from 'node:http';
import { MockcloudError } from '../../common/errors.js';

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export function readJsonObjectBody(req: http.IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const declared = Number.parseInt(String(req.headers['content-length'] ?? ''), 10);
  if (Number.isFinite(declared) && declared > maxBytes) {
    return Promise.reject(tooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (err: MockcloudError) => {
      if (failed) return;
      failed = true;
      req.removeListener('data', onData);
      // Stop buffering; the caller answers and closes the connection.
      req.pause();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        fail(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('error', (err) => fail(new MockcloudError('BadRequest', `error reading request body: ${err.message}`)));
    req.on('aborted', () => fail(new MockcloudError('BadRequest', 'request aborted')));
    req.on('end', () => {
      if (failed) return;
      const text = Buffer.concat(chunks).toString('utf8');
      // The request lives as long as its task (CNAPI holds the connection open till the end):
      // its listeners would keep the raw body in memory beside the parsed one.
      chunks.length = 0;
      req.removeListener('data', onData);
      if (text.trim().length === 0) {
        resolve({});
        return;
      }
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        reject(new MockcloudError('InvalidContent', `Invalid JSON: ${(err as Error).message}`));
        return;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        reject(new MockcloudError('InvalidContent', 'Request body must be a JSON object'));
        return;
      }
      resolve(value as Record<string, unknown>);
    });
  });
}

function tooLarge(maxBytes: number): MockcloudError {
  return new MockcloudError('RequestEntityTooLarge', `Request body size exceeds ${maxBytes}`);
}
