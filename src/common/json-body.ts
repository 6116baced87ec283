/**
 * A request's JSON body, for the daemon's own JSON surfaces (the control API, the fleet page):
 * read whole, at most `maxBytes` (413 RequestEntityTooLarge, after draining it so the answer
 * reaches the client), JSON whatever its Content-Type; undefined when empty.
 */
import type http from 'node:http';
import { MockcloudError } from './errors.js';

export async function readJsonBody(req: http.IncomingMessage, maxBytes: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Drain the whole body even when too large, so the error reply reaches the client.
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= maxBytes) chunks.push(chunk as Buffer);
  }
  if (size > maxBytes) {
    throw new MockcloudError('RequestEntityTooLarge', `request body is over ${maxBytes} bytes`);
  }
  if (size === 0) return undefined;
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new MockcloudError('InvalidContent', `request body is not valid JSON: ${(err as Error).message}`);
  }
}
