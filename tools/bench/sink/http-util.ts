/**
 * The few HTTP helpers the recording sink needs: read a JSON body (bounded), answer JSON or
 * a Triton-style error, and a tiny method + path-pattern router. Plain node:http on purpose:
 * the sink must cost little so the figures are the daemon's.
 */
import type http from 'node:http';
import { MockcloudError, toMockcloudError } from '../../../src/common/errors.js';
import { readJsonBody as readCommonJsonBody } from '../../../src/common/json-body.js';

const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface SinkRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Path parameters captured by the route pattern, in order. */
  params: string[];
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body; undefined when empty. */
  body: unknown;
}

export interface SinkReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type SinkHandler = (req: SinkRequest) => SinkReply | Promise<SinkReply>;

interface Route {
  method: string;
  pattern: RegExp;
  handler: SinkHandler;
}

const UUID = '([0-9a-fA-F-]{36})';
const SEGMENT = '([^/]+)';

/** Routes like `/servers/:uuid/events/heartbeat`; `:uuid` matches a UUID, any other `:x` one segment. */
export class Router {
  private readonly routes: Route[] = [];

  on(method: string, path: string, handler: SinkHandler): this {
    const source = path
      .split('/')
      .map((seg) => (seg === ':uuid' ? UUID : seg.startsWith(':') ? SEGMENT : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    this.routes.push({ method, pattern: new RegExp(`^${source}/?$`), handler });
    return this;
  }

  /** The handler and captured params, or why there is none (404 or 405). */
  match(method: string, path: string): { handler: SinkHandler; params: string[] } | 'not-found' | 'bad-method' {
    let pathMatched = false;
    for (const r of this.routes) {
      const m = r.pattern.exec(path);
      if (!m) continue;
      pathMatched = true;
      if (r.method === method) return { handler: r.handler, params: m.slice(1).map(decodeSegment) };
    }
    return pathMatched ? 'bad-method' : 'not-found';
  }
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new MockcloudError('BadRequest', `bad path segment ${JSON.stringify(s)}`);
  }
}

export function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  return readCommonJsonBody(req, MAX_BODY_BYTES);
}

export function sendReply(res: http.ServerResponse, reply: SinkReply): void {
  const text = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  const headers: Record<string, string | number> = { ...reply.headers };
  if (text.length > 0) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = Buffer.byteLength(text);
  } else {
    headers['content-length'] = 0;
  }
  res.writeHead(reply.status, headers);
  res.end(text);
}

export function errorReply(err: unknown): SinkReply {
  const e = toMockcloudError(err);
  return { status: e.statusCode, body: e.toBody() };
}

/** A pre-serialised JSON body (e.g. stored VM documents joined into an array). */
export function rawJson(status: number, text: string, headers: Record<string, string> = {}): SinkReply {
  return { status, body: text, headers: { 'content-type': 'application/json', ...headers } };
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `limit`/`offset` query values, as Triton APIs page lists (default limit 1000). */
export function paging(query: URLSearchParams, maxLimit = 1000): { offset: number; limit: number } {
  const int = (name: string, dflt: number): number => {
    const raw = query.get(name);
    if (raw === null || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new MockcloudError('InvalidParameters', `"${name}" must be a non-negative integer`);
    return n;
  };
  return { offset: int('offset', 0), limit: Math.min(int('limit', maxLimit), maxLimit) };
}
