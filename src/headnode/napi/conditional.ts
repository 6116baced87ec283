/**
 * Conditional requests on the dev NAPI's resources that carry an ETag (NICs, networks, pools,
 * aggregations), as restify's `conditionalRequest()` plugin answers them in front of sdc-napi's
 * routes.
 */
import { MockcloudError } from '../../common/errors.js';
import type { Req, Reply } from '../http.js';

/**
 * restify's `conditionalRequest()` as NAPI mounts it in front of `/nics/:mac`: an
 * `If-Match` that names neither `*` nor the current etag is 412; an `If-None-Match` that
 * names it is 304 for GET/HEAD and 412 otherwise.
 */
export function checkConditional(req: Req, etag: string): Reply | undefined {
  const normalize = (s: string): string => s.replace(/^W\//, '').replace(/^"(\w*)"$/, '$1');
  const ifMatch = req.headers['if-match'];
  if (ifMatch) {
    const tags = ifMatch.split(/\s*,\s*/).map(normalize);
    if (!tags.some((t) => t === '*' || t === etag)) {
      throw new MockcloudError('PreconditionFailed', `if-match '${ifMatch}' didn't match etag '${etag}'`);
    }
  }
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch) {
    const tags = ifNoneMatch.split(/\s*,\s*/).map(normalize);
    if (tags.some((t) => t === '*' || t === etag)) {
      if (req.method === 'GET' || req.method === 'HEAD') return { status: 304, headers: { Etag: etag } };
      throw new MockcloudError('PreconditionFailed', `if-none-match '${ifNoneMatch}' matched etag '${etag}'`);
    }
  }
  return undefined;
}
