/**
 * AdminImportLxdImage `POST /images?action=import-lxd-image&alias=REGISTRY:IMAGE` (sdc-imgapi
 * lib/lxd.js adminImportLxdImage): operator only, the alias checked, the registry looked up
 * among IMGAPI's defaults. Past those checks IMGAPI answers 200 and streams its progress as
 * JSON lines, a failure included as a `{"type":"error"}` line. The dev headnode reaches no
 * lxd registry: the stream says so in that line, with IMGAPI's code for an unreachable
 * remote source, and no image is made.
 */
import type http from 'node:http';
import { query, type Req } from '../http.js';
import { fieldErr, imgapiErrors } from './errors.js';

/** lxdclient.js DEFAULT_REGISTRIES. */
const REGISTRIES: Record<string, string> = {
  images: 'https://us.lxd.images.canonical.com',
  ubuntu: 'https://cloud-images.ubuntu.com/releases',
};

export function adminImportLxdImage(req: Req, res: http.ServerResponse): void {
  const q = query(req);
  if (q.account !== undefined) throw imgapiErrors.operatorOnly();
  const alias = typeof q.alias === 'string' ? q.alias : '';
  if (!alias) throw imgapiErrors.validationFailed('missing parameters', [fieldErr('alias', 'MissingParameter')]);
  const idx = alias.indexOf(':');
  if (idx < 1) throw imgapiErrors.invalidParameter('alias must be in the format "registry:image"', [fieldErr('alias', 'InvalidParameter')]);
  req.resume();
  const repo = alias.slice(0, idx);
  const url = REGISTRIES[repo];
  const error = url
    ? { code: 'RemoteSourceError', message: `lxd registry ${url} cannot be reached from the dev headnode (it has no outside access)` }
    : { code: 'InvalidParameter', message: `No registry found for "${repo}" - valid registries are "${Object.keys(REGISTRIES).join(', ')}"` };
  // The error goes into the stream, as lxd.js writes any failure once the checks passed.
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify({ type: 'error', id: alias, error, alias })}\r\n`);
}
