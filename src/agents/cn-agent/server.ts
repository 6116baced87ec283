/**
 * cn-agent's HTTP API for every mock CN: ONE restify 11 server, and one listening socket per
 * mock CN whose connections are fed into it. A request belongs to the CN whose socket
 * accepted it (the socket is tagged on accept, so a CN may have its own port, or its own
 * loopback IP on a shared port number). Nothing here is per CN but the socket and the small
 * CnSlot record.
 *
 * Routes, to the byte where consumers look (reference cn-agent-spec §2):
 *   POST /tasks    x-server-uuid; `task` in the body or the query; `params`. The reply is held
 *                  until the task ends: 200 with the finish value, or 500 {error, details?}
 *                  (plus `req_id` only when the params carry one, as task.js stamps it).
 *                  404 with an empty body while the CN is not registered with CNAPI or the
 *                  header names another server; 503 while paused; 409 for a missing
 *                  task/params; 404 for an unknown task; 400/413 for a bad body. Params the
 *                  task refuses are the task's own failure (500 and a history entry).
 *   GET /history   the CN's last 16 tasks.
 *   POST /pause, POST /resume   204.
 * Every reply has `Server: Compute Node Agent`, `x-request-id` (CNAPI's, echoed),
 * `x-response-time` and `x-server-name`.
 */
import net from 'node:net';
import os from 'node:os';
import restify from 'restify';
import { capMessage, ConnectionGuard, DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from '../../common/connection-guard.js';
import { MockcloudError, toMockcloudError } from '../../common/errors.js';
import { TurnPacer } from '../../common/turn-pacer.js';
import { failureFields, logFailure, type Logger } from '../../common/log.js';
import { describeSystemError } from '../../common/system-errors.js';
import type { AgentAddress, CnPower, MockCn } from '../../mockcn/types.js';
import { TaskAdmission, type AdmissionLimits } from './admission.js';
import { CnSlot } from './cn-slot.js';
import type { HistoryEntry } from './history.js';
import { DEFAULT_MAX_BODY_BYTES, readJsonObjectBody } from './http-body.js';
import { listen, PortAllocator, type PortRange } from './listeners.js';
import { TaskRunner, type TaskRunnerOptions } from './runner.js';
import { StreamListeners } from './stream-listeners.js';
import { TaskLogWriter } from './task-log.js';
import { findTask } from './tasks/index.js';
import { isPlainObject } from './task-support/params.js';
import { TaskError, type PreparedTask, type TaskEnvironment } from './types.js';

export interface CnAgentServerOptions {
  log: Logger;
  /** Where CN sockets bind unless `attach` names an IP. */
  bindIp: string;
  /** Ports for CN sockets; absent means ephemeral ports (see PortAllocator). */
  portRange?: PortRange | [number, number] | undefined;
  env: TaskEnvironment;
  /** 3600 by default, as the real agent. */
  taskTimeoutSeconds?: number;
  /** Largest accepted request body; 1 MiB by default. */
  maxBodyBytes?: number;
  /** `x-server-name`; os.hostname() by default. */
  hostname?: string;
  /** The shared task log file (task-log.ts); none: task logs only in `/history`. */
  taskLogFile?: string;
  /**
   * Deadlines and the cap on open connections across every CN's socket (connection-guard.ts).
   * Without a `maxConnections`, the cap is 6144 or, where the descriptor limit (`fdLimit`)
   * leaves more room, that limit less one descriptor per CN and DESCRIPTORS_KEPT_ASIDE.
   */
  connectionLimits?: Partial<ConnectionLimits>;
  /** The process's descriptor limit (`ulimit -n`); absent: the fixed default cap. */
  fdLimit?: number | undefined;
  /** How many tasks run at once, and wait, across the fleet and per CN (admission.ts). */
  admissionLimits?: Partial<AdmissionLimits>;
  /**
   * How long a docker task's listener waits for its client before closing; absent: each
   * task's real value (30 s for exec and copy, 60 s for stats and build).
   */
  streamTimeoutMs?: number;
  /** Told of every task's end (the daemon's metrics; see TaskRunnerOptions). */
  onTaskEnd?: TaskRunnerOptions['onTaskEnd'];
}

/** Requests refused before any task ran, by reason, for `mockcloud status`. */
export interface RejectionCounters {
  notRegistered: number;
  paused: number;
  badRequest: number;
  unknownTask: number;
}

const SERVER_NAME = 'Compute Node Agent';
/**
 * Descriptors a cap sized from the limit leaves to everything but the CN sockets: the control
 * API's, the fleet page's and cmon-agent's caps (1024 each), the outbound agent, files.
 */
export const DESCRIPTORS_KEPT_ASIDE = 4096;
/** New connections handed to HTTP per turn of the event loop (see onConnection). */
const CONNECTIONS_PER_TURN = 64;
/** Requests whose handling starts per turn of the event loop (see createRestifyServer). */
const REQUESTS_PER_TURN = 64;
/**
 * Heartbeats this late (a hot job overdue) start fewer tasks per turn (admission.ts): a CN's
 * gap CNAPI sees is 5 s plus its lateness, and CNAPI's budget for it is 6 s.
 */
const HEARTBEATS_LATE_MS = 100;

export class CnAgentServer {
  readonly runner: TaskRunner;
  /** Idle, slow and surplus connections to the CN sockets are closed (connection-guard.ts). */
  readonly connections: ConnectionGuard;
  /** Tasks beyond the bounds wait their turn, or beyond the queue are refused (admission.ts). */
  readonly admission: TaskAdmission;
  readonly rejected: RejectionCounters = { notRegistered: 0, paused: 0, badRequest: 0, unknownTask: 0 };
  private readonly log: Logger;
  private readonly bindIp: string;
  private readonly ports: PortAllocator;
  private readonly maxBodyBytes: number;
  private readonly hostname: string;
  private readonly http: restify.Server;
  private readonly slots = new Map<string, CnSlot>();
  private readonly socketSlots = new WeakMap<net.Socket, CnSlot>();
  private readonly attaching = new Set<string>();
  /** Accepted connections not yet handed to the HTTP server (see onConnection). */
  private readonly accepted: { slot: CnSlot; sock: net.Socket }[] = [];
  private readonly requestPacer = new TurnPacer(REQUESTS_PER_TURN);
  private stopped = false;
  /** The cap was given (--max-connections): it stays; else it follows the fleet (capFor). */
  private readonly fixedCap: boolean;
  private readonly fixedPerCn: boolean;
  private readonly fdLimit: number | undefined;
  private readonly taskLog: TaskLogWriter | undefined;
  /** The docker tasks' one-request listeners (stream-listeners.ts). */
  readonly streams: StreamListeners;

  constructor(opts: CnAgentServerOptions) {
    this.log = opts.log;
    this.bindIp = opts.bindIp;
    this.ports = new PortAllocator(opts.portRange);
    this.maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.hostname = opts.hostname ?? os.hostname();
    this.taskLog = opts.taskLogFile
      ? new TaskLogWriter(opts.taskLogFile, (err) => this.log.warn({ err, file: opts.taskLogFile }, 'cannot write the task log'))
      : undefined;
    this.streams = new StreamListeners({
      log: opts.log.child({ component: 'cn-agent-streams' }),
      ...(opts.streamTimeoutMs !== undefined ? { timeoutMs: opts.streamTimeoutMs } : {}),
    });
    this.runner = new TaskRunner({
      log: opts.log,
      env: { ...opts.env, streams: this.streams },
      ...(this.taskLog ? { taskLog: this.taskLog } : {}),
      ...(opts.taskTimeoutSeconds !== undefined ? { timeoutSeconds: opts.taskTimeoutSeconds } : {}),
      ...(opts.onTaskEnd ? { onTaskEnd: opts.onTaskEnd } : {}),
    });
    this.http = this.createRestifyServer();
    this.fixedCap = opts.connectionLimits?.maxConnections !== undefined;
    this.fixedPerCn = opts.connectionLimits?.maxPerGroup !== undefined;
    this.fdLimit = opts.fdLimit;
    const maxConnections = opts.connectionLimits?.maxConnections ?? this.capFor(0);
    // One CN's port takes at most a quarter of the slots: a flood on it sheds its own idle connections.
    this.connections = new ConnectionGuard(
      { maxPerGroup: perCnShare(maxConnections), ...opts.connectionLimits, maxConnections },
      { onCap: (report) => this.log.warn({ connections: report }, capMessage("the CNs' cn-agent sockets", report)) },
    );
    const scheduler = opts.env.scheduler;
    this.admission = new TaskAdmission(opts.admissionLimits, scheduler ? () => scheduler.hotLate(HEARTBEATS_LATE_MS) : undefined);
    const { maxQueued, maxInFlight } = this.admission.limits;
    if (this.connections.limits.maxConnections < maxQueued + maxInFlight) {
      this.log.warn(
        { maxConnections: this.connections.limits.maxConnections, maxQueued, maxInFlight },
        'fewer connections allowed than tasks waiting and running: a burst may be cut instead of queued or refused with 503 (--max-connections)',
      );
    }
    this.connections.watch(this.http.server);
  }

  /** The shared server needs no listening socket of its own; kept for the lifecycle contract. */
  start(): void {
    this.stopped = false;
    this.connections.start();
    this.streams.start();
  }

  /** Detach every CN (their running tasks are aborted and answered) and close their sockets. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.slots.keys()].map((uuid) => this.detach(uuid)));
    this.runner.stop();
    this.connections.stop();
    await this.streams.stop();
    await this.taskLog?.close();
  }

  get cnCount(): number {
    return this.slots.size;
  }

  get tasksInFlight(): number {
    return this.runner.tasksInFlight;
  }

  get tasksStartedOrEnded(): number {
    const c = this.runner.counters;
    return c.started + c.succeeded + c.failed + c.crashed + c.timedOut + c.aborted;
  }

  /** The fault-injection seam (see faults.ts). */
  get faults(): TaskRunner['faults'] {
    return this.runner.faults;
  }

  stats(): Record<string, unknown> {
    return {
      cns: this.slots.size,
      tasksInFlight: this.runner.tasksInFlight,
      tasks: { ...this.runner.counters },
      streams: this.streams.stats(),
      rejected: { ...this.rejected },
      connections: this.connections.stats(),
      admission: this.admission.stats(),
      faults: this.runner.faults.size,
    };
  }

  /** A CN's recent tasks, oldest first (what its `GET /history` serves); undefined if not attached. */
  history(uuid: string): readonly HistoryEntry[] | undefined {
    return this.slots.get(uuid)?.history.entries;
  }

  /**
   * The cap on the CN sockets' connections with `cns` CNs listening: the fixed default, or more
   * when the descriptor limit leaves room for it (one descriptor per CN's listening socket and
   * DESCRIPTORS_KEPT_ASIDE for the rest): the more of a flood the daemon holds, the fewer
   * connections it has to shed and the flood to reopen.
   */
  private capFor(cns: number): number {
    const fixed = DEFAULT_CONNECTION_LIMITS.maxConnections;
    if (this.fdLimit === undefined) return fixed;
    return Math.max(fixed, Math.min(this.fdLimit - cns - DESCRIPTORS_KEPT_ASIDE, 1_000_000));
  }

  /** The fleet grew or shrank: the cap follows the descriptors left (unless it was given). */
  private resizeCap(): void {
    if (this.fixedCap) return;
    const cap = this.capFor(this.slots.size);
    if (cap === this.connections.limits.maxConnections) return;
    this.connections.setMaxConnections(cap, this.fixedPerCn ? undefined : perCnShare(cap));
  }

  /** Where a CN's agent listens, if attached. */
  addressOf(uuid: string): AgentAddress | undefined {
    return this.slots.get(uuid)?.address;
  }

  /**
   * Give `cn` its listening socket: `ip` (default the bind IP) and `port` (default the next
   * free port of the range, or an ephemeral one). Sets and returns the CN's agent address.
   */
  async attach(cn: MockCn, opts: { ip?: string; port?: number } = {}): Promise<AgentAddress> {
    if (this.stopped) throw new MockcloudError('ServiceUnavailable', 'cn-agent is stopped');
    if (this.slots.has(cn.uuid) || this.attaching.has(cn.uuid)) {
      throw new MockcloudError('Conflict', `server ${cn.uuid} is already attached`);
    }
    const ip = opts.ip ?? this.bindIp;
    if (net.isIP(ip) === 0) throw new MockcloudError('InvalidArgument', `not an IP address: ${JSON.stringify(ip)}`);
    if (opts.port !== undefined && (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535)) {
      throw new MockcloudError('InvalidArgument', `not a port: ${JSON.stringify(opts.port)}`);
    }
    this.attaching.add(cn.uuid);
    try {
      let slot: CnSlot | undefined;
      // Paused: a burst of connections is read a slice per turn of the event loop (onConnection).
      const listener = net.createServer({ pauseOnConnect: true }, (sock) => this.onConnection(slot, sock));
      const port = await this.ports.bind(listener, ip, opts.port);
      const family = (listener.address() as net.AddressInfo).family;
      slot = new CnSlot(cn, listener, { ip, port }, family);
      // A failed (re)listen is the caller's to handle (setPower takes another port); an error on
      // a listening socket (EMFILE on accept) is one an operator must see.
      listener.on('error', (err) => {
        if (listener.listening) this.log.error({ ...failureFields(err), server: cn.uuid }, 'cn-agent listener error');
      });
      this.slots.set(cn.uuid, slot);
      this.resizeCap();
      cn.agentAddress = slot.address;
      this.log.debug({ server: cn.uuid, ip, port }, 'cn-agent attached');
      return slot.address;
    } finally {
      this.attaching.delete(cn.uuid);
    }
  }

  /** Stop serving a CN: refuse new requests, abort and answer its running tasks, close its socket. */
  async detach(uuid: string): Promise<void> {
    const slot = this.slots.get(uuid);
    if (!slot) return;
    this.slots.delete(uuid);
    this.resizeCap();
    slot.open = false;
    this.admission.dropCn(uuid, new Error(`task aborted: ${this.stopped ? 'cn-agent is stopping' : 'the mock CN was removed'}`));
    const closed = new Promise<void>((resolve) => slot.listener.close(() => resolve()));
    await slot.abortAll(this.stopped ? 'cn-agent is stopping' : 'the mock CN was removed');
    const lingering = slot.closeLingering();
    // Let the aborted tasks' replies go out before the connections are cut.
    await new Promise((r) => setImmediate(r));
    for (const sock of slot.sockets) sock.destroy();
    await lingering;
    await closed;
    this.ports.release(slot.address.ip, slot.address.port);
    this.log.debug({ server: uuid }, 'cn-agent detached');
  }

  /**
   * A CN going down or coming up. Down: its listener closes, so connections are refused as
   * on a CN whose cn-agent is not running (the real agent is stopped by the shutdown and
   * starts again late in the boot); its running tasks are aborted and their connections
   * cut, and its in-memory state (task history, pause) is lost, as the real agent's is. Up:
   * it listens again on the same address; if that port was taken meanwhile, on another one
   * (the CN's sysinfo, registered anew at boot, says which).
   */
  async setPower(uuid: string, power: CnPower): Promise<void> {
    const slot = this.slots.get(uuid);
    if (!slot || !slot.open) return;
    if (power === 'down') {
      if (slot.down) return;
      slot.down = true;
      const closed = new Promise<void>((resolve) => slot.listener.close(() => resolve()));
      for (const sock of slot.sockets) sock.destroy();
      await slot.abortAll('the server went down');
      await closed;
      slot.history.clear();
      slot.cn.draining = false;
      this.log.debug({ server: uuid }, 'cn-agent down');
      return;
    }
    if (!slot.down) return;
    const { ip, port } = slot.address;
    try {
      await listen(slot.listener, ip, port);
    } catch (err) {
      this.ports.release(ip, port);
      const fresh = await this.ports.bind(slot.listener, ip);
      slot.address = { ip, port: fresh };
      slot.cn.agentAddress = slot.address;
      // Handled: the CN registers its new address with CNAPI as it boots.
      this.log.warn(
        { ...failureFields(err), server: uuid, ip, port, newPort: fresh },
        `cn-agent port ${port} was taken while the server was down (${describeSystemError(err)}); it listens on ${fresh} now`,
      );
    }
    // The server may have been detached while it was coming up.
    if (!slot.open) {
      slot.listener.close();
      return;
    }
    slot.down = false;
    this.log.debug({ server: uuid, ...slot.address }, 'cn-agent up');
  }

  /**
   * A new connection is handed to the HTTP server only once it sends something: one that never
   * does (a flood of idle sockets) costs its descriptor and a place in the connection guard,
   * no parser, and is the first shed at the cap. Its first bytes are put back (unshift) for
   * the parser to read. Connections that spoke wait here until a later turn of the event loop
   * hands them over, CONNECTIONS_PER_TURN at a time: thousands of requests arriving at once
   * would otherwise all be parsed and dispatched in one turn (3.4 s at 5,000) while no
   * heartbeat timer could fire.
   */
  private onConnection(slot: CnSlot | undefined, sock: net.Socket): void {
    if (!slot || !slot.open) {
      sock.destroy();
      return;
    }
    if (!this.connections.admit(sock, slot.cn.uuid, { silent: true })) return;
    slot.sockets.add(sock);
    sock.once('close', () => slot.sockets.delete(sock));
    // Closed before a byte: nobody to answer.
    const onEnd = (): void => void sock.destroy();
    sock.once('end', onEnd);
    sock.once('data', (first: Buffer) => {
      sock.pause();
      sock.off('end', onEnd);
      sock.unshift(first);
      this.connections.spoke(sock);
      this.accepted.push({ slot, sock });
      if (this.accepted.length === 1) setImmediate(() => this.serveAccepted());
    });
    sock.resume();
  }

  private serveAccepted(): void {
    // Connections shed while they waited cost nothing: the slice counts live ones only.
    let taken = 0;
    let live = 0;
    while (taken < this.accepted.length && live < CONNECTIONS_PER_TURN) {
      if (!this.accepted[taken]!.sock.destroyed) live++;
      taken++;
    }
    const batch = this.accepted.splice(0, taken);
    if (this.accepted.length > 0) setImmediate(() => this.serveAccepted());
    for (const { slot, sock } of batch) {
      if (!slot.open || sock.destroyed) {
        sock.destroy();
        continue;
      }
      this.socketSlots.set(sock, slot);
      this.http.server.emit('connection', sock);
      sock.resume();
    }
  }

  private slotOf(req: restify.Request): CnSlot | undefined {
    const slot = this.socketSlots.get(req.socket as net.Socket);
    return slot?.open ? slot : undefined;
  }

  // ---- HTTP

  private createRestifyServer(): restify.Server {
    const server = restify.createServer({ name: SERVER_NAME, log: this.log.child({ component: 'cn-agent-http' }) });
    // A burst of requests is parsed in one turn; its handling goes a slice per turn (turn-pacer.ts).
    server.pre((req, res, next) => {
      // Requests waiting here count toward the task queue's bound: beyond it, a 503 at once.
      const waiting = this.requestPacer.backlog;
      if (waiting > 0 && req.method === 'POST' && waiting + this.admission.stats().queued >= this.admission.limits.maxQueued) {
        res.header('retry-after', '1');
        sendError(res, this.admission.refusal(waiting));
        next(false);
        return;
      }
      this.requestPacer.run(() => next());
    });
    server.pre(restify.plugins.pre.reqIdHeaders({ headers: [] }));
    server.pre((req, res, next) => {
      const started = Date.now();
      res.header('x-request-id', req.getId());
      res.once('header', () => {
        res.header('x-response-time', Date.now() - started);
        res.header('x-server-name', this.hostname);
      });
      next();
    });
    server.use(restify.plugins.queryParser({ mapParams: false }));

    server.post('/tasks', (req, res, next) => {
      this.postTask(req, res).then(
        () => next(),
        (err: unknown) => {
          logFailure(this.log, err, {}, 'POST /tasks failed');
          if (!res.headersSent) sendError(res, toMockcloudError(err));
          next();
        },
      );
    });
    server.get('/history', (req, res, next) => {
      res.send(200, this.slotOf(req)?.history.entries ?? []);
      next();
    });
    server.post('/pause', (req, res, next) => {
      const slot = this.slotOf(req);
      if (slot) slot.cn.draining = true;
      res.send(204);
      next();
    });
    server.post('/resume', (req, res, next) => {
      const slot = this.slotOf(req);
      if (slot) slot.cn.draining = false;
      res.send(204);
      next();
    });
    return server;
  }

  private async postTask(req: restify.Request, res: restify.Response): Promise<void> {
    const slot = this.slotOf(req);
    const header = req.headers['x-server-uuid'];
    const target = Array.isArray(header) ? header[0] : header;
    if (!slot || !slot.cn.registered || (target !== undefined && target !== slot.cn.uuid)) {
      // The real agent has no handler for that uuid (yet): 404 with no body at all.
      this.rejected.notRegistered++;
      res.header('content-length', 0);
      res.send(404);
      return;
    }
    if (slot.cn.draining) {
      this.rejected.paused++;
      sendError(res, new MockcloudError('ServiceUnavailable', 'CN Agent is not accepting tasks for maintenance'));
      return;
    }

    let body: Record<string, unknown>;
    try {
      body = await readJsonObjectBody(req, this.maxBodyBytes);
    } catch (err) {
      this.rejected.badRequest++;
      const e = toMockcloudError(err);
      if (e.code === 'RequestEntityTooLarge') res.header('connection', 'close');
      sendError(res, e);
      return;
    }

    const query = isPlainObject(req.query) ? req.query : {};
    // restify 4 merged the query into params first and the body did not override it.
    const task = query.task !== undefined ? query.task : body.task;
    // What the real HTTP layer checks before any task runs (task_agent.js): the two keys
    // exist, and the task is in the table. Everything else is the task's own business.
    if (task === undefined || !Object.hasOwn(body, 'params')) {
      this.rejected.badRequest++;
      sendError(res, new MockcloudError('InvalidArgument', task === undefined ? "Missing key 'task'" : "Missing key 'params'"));
      return;
    }
    const def = typeof task === 'string' ? findTask(task) : undefined;
    if (!def) {
      this.rejected.unknownTask++;
      sendError(res, new MockcloudError('ResourceNotFound', `Unknown task, '${String(task).slice(0, 200)}'`));
      return;
    }
    const params = body.params;
    let prepared: PreparedTask;
    try {
      if (!isPlainObject(params)) throw new TaskError('params must be an object');
      prepared = def.prepare(params);
    } catch (err) {
      // A real task checks its own params once it has started and fails with fatal():
      // a 500 {error} and a history entry, not an HTTP-level refusal.
      prepared = failingTask(err);
    }
    // A task waiting for its turn whose client has gone leaves the queue.
    const gone = new AbortController();
    const onClose = (): void => {
      if (!res.writableEnded) gone.abort(new Error('the client went away'));
    };
    res.once('close', onClose);
    let release;
    try {
      release = await this.admission.acquire(slot.cn.uuid, gone.signal);
    } catch (err) {
      res.off('close', onClose);
      if (gone.signal.aborted) return;
      const e = toMockcloudError(err);
      if (e.code === 'ServiceUnavailable') {
        res.header('retry-after', '1');
        sendError(res, e);
      } else {
        res.send(500, { error: e.message });
      }
      return;
    }
    try {
      // `gone` still listens: a task hung by a fault event ends when its client goes.
      const outcome = await this.runner.run({ slot, task: def, prepared, params, reqId: req.getId(), clientGone: gone.signal, place: release });
      res.send(outcome.statusCode, outcome.body);
    } finally {
      res.off('close', onClose);
      release();
    }
  }
}

/** One CN's port takes at most a quarter of the CN sockets' slots. */
function perCnShare(cap: number): number {
  return Math.max(16, Math.floor(cap / 4));
}

/** A task whose params did not pass its checks: it runs, and fails with their message. */
function failingTask(err: unknown): PreparedTask {
  const message = err instanceof Error ? err.message : String(err);
  return {
    locks: [],
    run: () => Promise.reject(err instanceof TaskError ? err : new TaskError(message)),
  };
}

function sendError(res: restify.Response, err: MockcloudError): void {
  res.send(err.statusCode, err.toBody());
}
