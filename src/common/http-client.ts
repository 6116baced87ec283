/**
 * The one outbound HTTP client of the daemon: JSON over one keep-alive agent, shared by every
 * mock CN's traffic to CNAPI, VMAPI and NAPI, with a few connections of a hot lane for
 * heartbeats. Per-request headers (User-Agent with the server
 * uuid, x-request-id) come from the caller.
 */
import http from 'node:http';
import { MockcloudError } from './errors.js';
import { Gate } from './gate.js';

export interface HttpResponse<T = unknown> {
  statusCode: number;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON when the body is JSON; the raw text otherwise; undefined when empty. */
  body: T;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD';
  /** Absolute URL, e.g. `http://127.0.0.1:8080/servers/<uuid>/events/heartbeat`. */
  url: string;
  /** Sent as JSON; a Buffer is sent as it is, as `application/octet-stream` (an image file). */
  body?: unknown;
  headers?: Record<string, string>;
  /** Aborts the request (a task's signal: the task was cancelled or its CN detached). */
  signal?: AbortSignal;
  /**
   * The whole request's deadline, counted from the call: the wait for a free socket of the
   * agent, the connection and the answer. A peer that accepts connections but never answers
   * fails each request within it, not after every queued request before it has timed out.
   */
  timeoutMs?: number;
  /**
   * An agent's bulk sync (vm-agent to VMAPI, net-agent to NAPI), not a CN's heartbeat, status or
   * task: at most `backgroundInFlight` of these are sent at once, the rest wait their turn.
   */
  background?: boolean;
  /**
   * A CN's heartbeat (what CNAPI's view of the CN's life rides on): sent on connections of its
   * own, the hot lane, never behind the status reports and task calls waiting for a connection.
   */
  hot?: boolean;
  /** On a connection of its own, not one of the pool's (a request sent again after a reset). */
  freshConnection?: boolean;
}

/** A non-2xx answer; `body` is the peer's error body (restify-style when it is Triton). */
export class HttpStatusError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: unknown,
    readonly request: { method: string; url: string },
  ) {
    const code = (body as { code?: string } | undefined)?.code;
    const msg = (body as { message?: string } | undefined)?.message;
    super(`${request.method} ${request.url}: ${statusCode}${code ? ` ${code}` : ''}${msg ? `: ${msg}` : ''}`);
    this.name = 'HttpStatusError';
  }

  get restCode(): string | undefined {
    return (this.body as { code?: string } | undefined)?.code;
  }
}

/** Methods a request may be repeated with (RFC 9110 §9.2.2), as far as this client sends them. */
const IDEMPOTENT = new Set<HttpRequest['method']>(['GET', 'HEAD', 'PUT', 'DELETE']);

/** The peer closed the connection under the request (a reset, or a close before any answer). */
function isReset(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE' || err.message === 'aborted';
}

/**
 * The fault seam on outbound requests (the events engine's partitions and outbound faults):
 * undefined lets the request go; a promise holds it until it resolves (then it is sent) or
 * fails it with the promise's error. Consulted only while one is installed.
 */
export type OutboundInterceptor = (req: HttpRequest, timeoutMs: number) => Promise<void> | undefined;

/**
 * Told of the end of every request (the daemon's metrics): the answer's status code, or
 * undefined and the error when there was none (a timeout, a reset, a partition's hold that
 * ran out); `ms` from the moment it was sent (after any background turn or fault hold; a
 * request failed by a fault hold: the hold), a retry on a fresh connection included. Called
 * once per request, only while one is set.
 */
export type RequestObserver = (req: HttpRequest, statusCode: number | undefined, err: unknown, ms: number) => void;

export interface HttpClientOptions {
  maxSockets?: number;
  timeoutMs?: number;
  userAgent?: string;
  /** Background requests in flight at once (default 32), while no other request waits for a connection. */
  backgroundInFlight?: number;
  /** The largest answer body read; a larger one fails the request (default 64 MiB). */
  maxResponseBytes?: number;
  /** Connections per origin of the hot lane (default HOT_SOCKETS). */
  hotSockets?: number;
  /** How long an idle hot-lane connection stays open (default HOT_IDLE_MS). */
  hotIdleMs?: number;
}

/**
 * Answers are read whole, so their size is bounded: a Triton API's largest page (1,000 VMs,
 * 100 servers with all their extras) is a few MiB; a peer sending more is not one of them.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/**
 * The hot lane's connections per origin. A busy process reads an answer once per turn of its
 * event loop, so a connection carries about one request per turn: 10,000 CNs send 2,000
 * heartbeats a second, and a loop turning every 100-250 ms under a burst of tasks needs some
 * 500 connections to carry them (16 carried 160 a second, and most heartbeats timed out
 * waiting for one). Idle, a few are open: a connection opens only when every open one is busy.
 */
const HOT_SOCKETS = 512;
/**
 * How long a hot-lane connection sits idle before this side closes it. Connections are reused
 * newest first, so the ones a burst opened beyond the steady load fall idle and close within
 * this time (each holds a slot of CNAPI's connection cap while open). Below a peer's own
 * keep-alive (Node's 5 s): the client closes first, and no heartbeat POST goes out on a
 * connection the peer is closing (a POST is not sent again).
 *
 * Not a cap on idle connections, as before: when one turn of the loop read hundreds of answers
 * (10,000 CNs), a cap closed all but its number of the connections they freed, and the next
 * turn's heartbeats opened as many again at once. Past CNAPI's listen backlog (Node's 511) the
 * kernel dropped them, and each came a second late, once the SYN was sent again (heartbeat
 * gaps over 6 s, issue 26). The timeout also fires on a connection in use; nothing listens for
 * it there (the request's own deadline rules), and Node's agent closes only idle ones.
 */
const HOT_IDLE_MS = 4000;

/**
 * Background requests in flight while other requests wait for a connection. A peer that falls
 * behind (a burst of tasks on a timing profile: every VM's stages synced to VMAPI, heartbeats
 * and status reports to CNAPI, one process answering both) then spends its time on what CNAPI
 * needs to see the CNs alive; the syncs catch up after.
 */
const BACKGROUND_WHILE_BUSY = 4;

export class JsonHttpClient {
  readonly agent: http.Agent;
  /** The hot lane's connections (HttpRequest.hot). */
  private readonly hotAgent: http.Agent;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly maxResponseBytes: number;
  /** Counters for `mockcloud status`; `retries`: requests sent again after a reset reused socket. */
  stats = { requests: 0, errors: 0, retries: 0 };
  /**
   * Turns of background requests. They wait here as a closure, not as a request in the agent's
   * queue: a start with 100,000 VMs queued some 50,000 requests there (a GB of heap, and every
   * heartbeat behind them waited 12 s).
   */
  private readonly background: Gate;
  private interceptorFn: OutboundInterceptor | undefined;
  private readonly interceptorWatchers = new Set<(installed: boolean) => void>();
  /** See OutboundInterceptor; undefined (no check at all) unless a fault event needs it. */
  get interceptor(): OutboundInterceptor | undefined {
    return this.interceptorFn;
  }
  set interceptor(fn: OutboundInterceptor | undefined) {
    const was = this.interceptorFn !== undefined;
    this.interceptorFn = fn;
    if (was !== (fn !== undefined)) for (const w of this.interceptorWatchers) w(fn !== undefined);
  }
  /**
   * `fn(installed)` whenever an interceptor comes or goes: requests sent by another client on
   * the client's behalf (the heartbeat thread's) come back here while one is installed.
   */
  watchInterceptor(fn: (installed: boolean) => void): () => void {
    this.interceptorWatchers.add(fn);
    return () => this.interceptorWatchers.delete(fn);
  }
  /** See RequestObserver; undefined costs nothing. */
  observer: RequestObserver | undefined;

  constructor(opts: HttpClientOptions = {}) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64, scheduling: 'fifo' });
    const hotSockets = opts.hotSockets ?? HOT_SOCKETS;
    this.hotAgent = new http.Agent({
      keepAlive: true,
      maxSockets: hotSockets,
      maxFreeSockets: hotSockets,
      scheduling: 'lifo',
      timeout: opts.hotIdleMs ?? HOT_IDLE_MS,
    });
    this.timeoutMs = opts.timeoutMs ?? 5000;
    this.userAgent = opts.userAgent ?? 'mockcloud';
    this.maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const backgroundInFlight = Math.max(1, opts.backgroundInFlight ?? 32);
    const whileBusy = Math.min(backgroundInFlight, BACKGROUND_WHILE_BUSY);
    this.background = new Gate(() => (waitingIn(this.agent) > 0 ? whileBusy : backgroundInFlight));
  }

  /** Background requests waiting for their turn. */
  get backgroundQueued(): number {
    return this.background.waiting;
  }

  /** Requests waiting in the agent for a free connection (heartbeats, status reports, tasks' own). */
  get queued(): number {
    return waitingIn(this.agent) + waitingIn(this.hotAgent);
  }

  /** Any answer, 2xx or not; rejects only on transport errors and timeouts. */
  request<T = unknown>(req: HttpRequest): Promise<HttpResponse<T>> {
    // Held before the background gate: a partitioned CN's requests take no other CN's turn.
    const held = this.interceptorFn?.(req, req.timeoutMs ?? this.timeoutMs);
    if (held) {
      const t0 = performance.now();
      return held.then(
        () => this.dispatch<T>(req),
        (err: unknown) => {
          this.stats.requests++;
          this.stats.errors++;
          this.observer?.(req, undefined, err, performance.now() - t0);
          throw err;
        },
      );
    }
    return this.dispatch<T>(req);
  }

  private dispatch<T>(req: HttpRequest): Promise<HttpResponse<T>> {
    return req.background ? this.background.run(() => this.send<T>(req)) : this.send<T>(req);
  }

  private send<T>(req: HttpRequest): Promise<HttpResponse<T>> {
    this.stats.requests++;
    const binary = Buffer.isBuffer(req.body);
    const payload = req.body === undefined ? undefined : binary ? (req.body as Buffer) : Buffer.from(JSON.stringify(req.body));
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.userAgent,
      ...req.headers,
    };
    if (payload) {
      headers['content-type'] = binary ? 'application/octet-stream' : 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const timeoutMs = req.timeoutMs ?? this.timeoutMs;
    // One deadline for the whole request, a retry included.
    const deadline = Date.now() + timeoutMs;
    let sent = this.attempt<T>(req, headers, payload, deadline, timeoutMs, IDEMPOTENT.has(req.method));
    // A connection freed: background turns held back while others waited may go again.
    if (!req.background) sent = sent.finally(() => this.background.waiting > 0 && this.background.recheck());
    const observer = this.observer;
    if (observer === undefined) {
      return sent.catch((err: unknown) => {
        this.stats.errors++;
        throw err;
      });
    }
    const t0 = performance.now();
    return sent.then(
      (res) => {
        observer(req, res.statusCode, undefined, performance.now() - t0);
        return res;
      },
      (err: unknown) => {
        this.stats.errors++;
        observer(req, undefined, err, performance.now() - t0);
        throw err;
      },
    );
  }

  /**
   * One try. A keep-alive socket the peer closed while it sat in the pool fails the request
   * sent on it with a reset ("socket hang up") whether or not the peer saw the request; an
   * idempotent request (GET, HEAD, PUT, DELETE) is then sent once more on a fresh socket, as
   * RFC 9110 §9.2.2 allows. A POST is not: the caller knows whether repeating it is safe.
   */
  private attempt<T>(
    req: HttpRequest,
    headers: Record<string, string>,
    payload: Buffer | undefined,
    deadline: number,
    timeoutMs: number,
    mayRetry: boolean,
  ): Promise<HttpResponse<T>> {
    return new Promise<HttpResponse<T>>((resolve, reject) => {
      let settled = false;
      let timedOut = false;
      const fail = (err: Error, r: http.ClientRequest): void => {
        if (settled) return;
        settled = true;
        if (mayRetry && !timedOut && r.reusedSocket && isReset(err) && Date.now() < deadline) {
          this.stats.retries++;
          // On a new connection: the pool's other idle sockets may be as stale as this one.
          resolve(this.attempt<T>({ ...req, freshConnection: true }, headers, payload, deadline, timeoutMs, false));
          return;
        }
        reject(err);
      };
      const agent = req.freshConnection ? false : req.hot ? this.hotAgent : this.agent;
      const r = http.request(req.url, { method: req.method, headers, agent, signal: req.signal }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > this.maxResponseBytes) {
            r.destroy(new MockcloudError('BadGateway', `${req.method} ${req.url}: the answer is over ${this.maxResponseBytes} bytes; not read`));
            return;
          }
          chunks.push(c);
        });
        res.on('error', (err) => fail(err, r));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = undefined;
          if (text.length > 0) {
            try {
              body = JSON.parse(text);
            } catch {
              body = text;
            }
          }
          resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: body as T });
        });
      });
      // Destroying a request still queued in the agent takes it out of the queue.
      const timer = setTimeout(() => {
        timedOut = true;
        const waited = r.socket ? 'no answer' : 'no free connection';
        r.destroy(new MockcloudError('GatewayTimeout', `${req.method} ${req.url}: timed out after ${timeoutMs} ms (${waited})`));
      }, Math.max(0, deadline - Date.now()));
      r.on('error', (err) => fail(err, r));
      r.on('close', () => clearTimeout(timer));
      r.end(payload);
    });
  }

  /** Like `request`, but a non-2xx answer rejects with HttpStatusError. */
  async call<T = unknown>(req: HttpRequest): Promise<HttpResponse<T>> {
    const res = await this.request<T>(req);
    if (res.statusCode < 200 || res.statusCode >= 300) {
      this.stats.errors++;
      throw new HttpStatusError(res.statusCode, res.body, { method: req.method, url: req.url });
    }
    return res;
  }

  close(): void {
    this.agent.destroy();
    this.hotAgent.destroy();
  }
}

/** Requests waiting in `agent` for a free connection, over all origins. */
function waitingIn(agent: http.Agent): number {
  let n = 0;
  for (const key in agent.requests) n += agent.requests[key]?.length ?? 0;
  return n;
}
