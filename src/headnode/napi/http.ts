/**
 * Restify plumbing for the dev headnode's NAPI and IMGAPI: a server with query and JSON
 * body parsing, request parameters merged the way restify 4's `mapParams` gave them to
 * NAPI (path, then query, then body: an earlier source wins), async handlers whose
 * thrown errors become Triton-style bodies, and listen/close helpers.
 */
import { createRequire } from 'node:module';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type restifyTypes from 'restify';
import { MockcloudError, toMockcloudError } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';

const require = createRequire(import.meta.url);
const restify = require('restify') as typeof restifyTypes;

export type RestifyServer = restifyTypes.Server;
export type Req = restifyTypes.Request;
export type Res = restifyTypes.Response;
export type Params = Record<string, unknown>;

/** What a handler answers; `undefined` when it sent the response itself. */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: Req, res: Res) => Promise<Reply | void> | Reply | void;

export function createServer(opts: { name: string; log: Logger; version?: string }): RestifyServer {
  const server = restify.createServer({
    name: opts.name,
    log: opts.log,
    handleUncaughtExceptions: false,
    ...(opts.version ? { version: opts.version } : {}),
  } as restifyTypes.ServerOptions);
  server.use(restify.plugins.queryParser({ mapParams: false }));
  server.use(restify.plugins.bodyParser({ mapParams: false, maxBodySize: 8 * 1024 * 1024 }));
  // Keep-alive clients (the daemon's shared agent) reuse sockets; Node's 5 s default would
  // race their reuse.
  server.server.keepAliveTimeout = 65_000;
  return server;
}

/** Path, query and body parameters as one object; path wins over query, query over body. */
export function params(req: Req): Params {
  const out: Params = {};
  const body = (req as unknown as { body?: unknown }).body;
  if (body && typeof body === 'object' && !Array.isArray(body)) Object.assign(out, body);
  const query = (req as unknown as { query?: unknown }).query;
  if (query && typeof query === 'object') Object.assign(out, query);
  for (const [k, v] of Object.entries(req.params ?? {})) {
    if (v !== undefined) out[k] = v;
  }
  return out;
}

export function sendError(res: Res, err: unknown, log: Logger): void {
  const e = toMockcloudError(err);
  if (e.statusCode >= 500 && e.restCode === 'InternalError') log.error({ err }, 'request failed');
  if (!res.headersSent) res.send(e.statusCode, e.toBody());
}

/** An async handler as restify middleware: replies are sent, thrown errors become bodies. */
export function route(log: Logger, fn: Handler): restifyTypes.RequestHandler {
  return (req, res, next) => {
    Promise.resolve()
      .then(() => fn(req, res))
      .then(
        (reply) => {
          if (reply && !res.headersSent) {
            if (reply.headers) for (const [k, v] of Object.entries(reply.headers)) res.header(k, v);
            if (reply.body === undefined) res.send(reply.status);
            else res.send(reply.status, reply.body);
          }
          next();
        },
        (err: unknown) => {
          sendError(res, err, log);
          next();
        },
      );
  };
}

export function listen(server: RestifyServer, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    // On the restify server, not its http server: restify re-emits the http server's
    // 'error' first and would throw it as unhandled before a listener there ran.
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const addr = server.server.address() as AddressInfo;
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolve(`http://${h}:${addr.port}`);
    });
  });
}

export function closeServer(server: RestifyServer): Promise<void> {
  return new Promise((resolve) => {
    const s = server.server as http.Server;
    if (!s.listening) {
      resolve();
      return;
    }
    s.close(() => resolve());
    s.closeAllConnections?.();
  });
}

/** A 404 for a path no route serves, shaped like restify's. */
export function routeNotFound(path: string): MockcloudError {
  return new MockcloudError('ResourceNotFound', `${path} does not exist`);
}
