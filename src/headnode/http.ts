/**
 * The restify plumbing every dev-headnode service (CNAPI, VMAPI, NAPI, IMGAPI) shares: one way
 * to build a server, to merge request parameters the way restify 4's `mapParams` gave them to
 * Triton's services, to run handlers, and to turn any thrown error into the Triton-style
 * `{"code","message"}` body. Route modules stay free of callback plumbing.
 */
import { createRequire } from 'node:module';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import type restifyTypes from 'restify';
import { logFailure, type Logger } from '../common/log.js';
import type { Duplex } from 'node:stream';
import { capMessage, ConnectionGuard, type ConnectionLimits } from '../common/connection-guard.js';
import { MockcloudError, toMockcloudError } from '../common/errors.js';

const require = createRequire(import.meta.url);
const restify = require('restify') as typeof restifyTypes;

export type RestifyServer = restifyTypes.Server;
export type Req = restifyTypes.Request;
export type Res = restifyTypes.Response;

/** Request parameters as Triton services see them (see `params`). */
export type Params = Record<string, unknown>;

/** What a handler returns: a status with an optional JSON body, or nothing (already sent). */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: Req, res: Res) => Promise<Reply | void> | Reply | void;

export interface CreateServerOptions {
  name: string;
  log: Logger;
  /** Largest accepted request body; restify answers 413 above it. 16 MiB by default. */
  maxBodyBytes?: number;
  /** The API version restify advertises, where the real service sets one. */
  version?: string;
  /** false: no restify body parsing; the caller reads bodies itself. */
  parseBody?: boolean;
  /** The longest path parameter a route matches (find-my-way's default: 100); longer is a 404. */
  maxParamLength?: number;
  /** Connection deadlines and cap, over the defaults below (tests shorten them). */
  connectionLimits?: Partial<ConnectionLimits>;
}

/**
 * A restify server with query and JSON body parsing but *without* restify's own mapParams:
 * `params()` below does the merging so precedence is explicit.
 */
export function createServer(opts: CreateServerOptions): RestifyServer {
  const server = restify.createServer({
    name: opts.name,
    log: opts.log,
    handleUncaughtExceptions: false,
    ...(opts.version ? { version: opts.version } : {}),
    ...(opts.maxParamLength ? { maxParamLength: opts.maxParamLength } : {}),
  } as restifyTypes.ServerOptions);
  server.pre(sizeHeadAnswers);
  server.use(restify.plugins.queryParser({ mapParams: false }));
  if (opts.parseBody !== false) {
    server.use(restify.plugins.bodyParser({ mapParams: false, maxBodySize: opts.maxBodyBytes ?? 16 * 1024 * 1024 }));
  }
  // Task waits and provisions hold requests open for a long time, as CNAPI's one-hour
  // connection timeout allows; Node's default 5-minute request timeout would cut them.
  server.server.requestTimeout = 0;
  server.server.headersTimeout = 60_000;
  // Keep-alive clients (the daemon's shared agent) reuse sockets; Node's 5 s default would
  // race their reuse.
  server.server.keepAliveTimeout = KEEP_ALIVE_MS;
  const guard = new ConnectionGuard(
    { idleTimeoutMs: KEEP_ALIVE_MS, maxConnections: 1024, ...opts.connectionLimits },
    { onCap: (report) => opts.log.warn({ connections: report, listener: opts.name }, capMessage(opts.name, report)) },
  );
  guard.watch(server.server);
  guards.set(server, guard);
  return server;
}

/**
 * restify 4 (which Triton's services run) formats a HEAD answer's body to size it: the headers
 * say what a GET would send (Content-Type, Content-Length), only the body is left out. restify
 * 11 skips formatting for HEAD, so the size is put back just before the headers go out.
 */
function sizeHeadAnswers(req: Req, res: Res, next: () => void): void {
  if (req.method === 'HEAD') {
    const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => unknown;
    (res as unknown as { writeHead: (...args: unknown[]) => unknown }).writeHead = (...args: unknown[]) => {
      const body = (res as unknown as { _body?: unknown })._body;
      if (body !== undefined && !res.getHeader('content-length')) {
        const json = JSON.stringify(body instanceof MockcloudError ? body.toBody() : body);
        if (json !== undefined) {
          res.setHeader('Content-Type', 'application/json');
          res.setHeader('Content-Length', Buffer.byteLength(json));
        }
      }
      return writeHead(...args);
    };
  }
  next();
}

/** How long a kept-alive connection may idle between requests, on every listener of ours. */
export const KEEP_ALIVE_MS = 65_000;

/** Each server's connection deadlines (connection-guard.ts), kept while it listens. */
const guards = new WeakMap<RestifyServer, ConnectionGuard>();

/**
 * Hand the server's websocket upgrades to `accept`; an upgrade it takes leaves the connection
 * guard's HTTP deadlines (a changefeed stays open for as long as its listener), one it refuses
 * is closed.
 */
export function onUpgrade(server: RestifyServer, accept: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean): void {
  server.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (accept(req, socket, head)) guards.get(server)?.upgraded(socket);
    else socket.destroy();
  });
}

export function listen(server: RestifyServer, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    // On the restify server, not its http server: restify re-emits the http server's
    // 'error' first and would throw it as unhandled before a listener there ran.
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      guards.get(server)?.start();
      const addr = server.server.address() as AddressInfo;
      const h = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolve(`http://${h}:${addr.port}`);
    });
  });
}

export function closeServer(server: RestifyServer): Promise<void> {
  guards.get(server)?.stop();
  return new Promise((resolve) => {
    const s = server.server as http.Server;
    if (!s.listening) {
      resolve();
      return;
    }
    s.close(() => resolve());
    // Idle keep-alive sockets would hold close() open; in-flight requests are cut short.
    s.closeAllConnections?.();
  });
}

/**
 * Path, query and JSON body merged into one object, as restify 4's `mapParams` did: path
 * parameters win over query, query over body. A non-object body (an array, a string)
 * contributes nothing.
 */
export function params(req: Req): Params {
  const out: Params = {};
  const b = body(req);
  if (b && typeof b === 'object' && !Array.isArray(b)) Object.assign(out, b);
  Object.assign(out, query(req));
  for (const [k, v] of Object.entries(req.params ?? {})) {
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** The parsed JSON body, or undefined when the request had none. */
export function body(req: Req): unknown {
  return (req as unknown as { body?: unknown }).body;
}

export function query(req: Req): Record<string, unknown> {
  const q = (req as unknown as { query?: unknown }).query;
  return q && typeof q === 'object' ? (q as Record<string, unknown>) : {};
}

export function sendError(res: Res, err: unknown, log: Logger): void {
  const e = toMockcloudError(err);
  if (clientWentAway(res, err)) {
    // Not the service's failure: nobody is left to answer (an upload dropped half-way).
    log.warn({ err: e.message, method: res.req?.method, path: res.req?.url }, 'the client went away before its request was done');
  } else if (e.statusCode >= 500) {
    // A coded 5xx is an answer (a peer down, CNAPI's failed execution); anything else is a bug.
    logFailure(log, err, {}, 'request failed');
  }
  if (!res.headersSent && !res.destroyed) res.send(e.statusCode, e.toBody());
}

/** The request failed because its client closed the connection (reset, or closed mid-body). */
function clientWentAway(res: Res, err: unknown): boolean {
  const req = res.req as (http.IncomingMessage & { readableAborted?: boolean }) | undefined;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const aborted = req?.readableAborted === true || req?.aborted === true;
  return aborted && (code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || (err as Error | undefined)?.message === 'aborted' || res.destroyed);
}

/** A handler as restify middleware: replies are sent here, thrown errors become bodies. */
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

/** Shorthand for a JSON reply. */
export function ok(body: unknown, status = 200): Reply {
  return { status, body };
}

export function noContent(): Reply {
  return { status: 204 };
}

/** Any error thrown inside: a coded one is kept, anything else becomes InternalError. */
export function internal(message: string, cause?: unknown): MockcloudError {
  return new MockcloudError('InternalError', message, { cause });
}
