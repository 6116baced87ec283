/**
 * cmon-agent for every mock CN on ONE listener (port 9163 by default), the routes of the real
 * agent (triton-cmon-agent lib/endpoints/metrics.js):
 *
 *   GET  /v1/<vm_uuid>/metrics   Prometheus text for a running VM of the addressed CN(s);
 *                                404 `container not found` for an unknown or stopped VM (the
 *                                real agent finds no running zone then); 400 when
 *                                `x-joyent-cmon-opts` is not base64 JSON with a boolean
 *                                `isCoreZone`. Without the header, a VM owned by the admin user
 *                                with a smartdc_role / manta_role tag counts as a core zone, and
 *                                an unknown VM is the 500 of the agent's failed `vmadm get`
 *                                (node-vmadm's `vmadm load <uuid> failed: No such zone`).
 *   GET  /v1/gz/metrics          Prometheus text for the addressed CN (routing.ts).
 *   POST /v1/refresh             200, nothing to do (the real agent keeps it for compatibility).
 *
 * Bodies are gzipped when the client accepts gzip (the real agent uses restify's gzipResponse).
 * The metrics handler sets `content-type: text/plain` before it does anything, so its errors
 * are restify 4's text form: the status and the bare message (triton-cmon-agent
 * lib/endpoints/metrics.js); errors of the router (no such route, wrong method) are
 * restify-style JSON `{"code","message"}`. No per-CN socket or timer: one server, one pruning
 * job on the shared Scheduler.
 */
import type http from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { AgentPluginContext, CnAgentPlugin } from '../../runtime/agent-plugin.js';
import type { ScheduledJob } from '../../runtime/scheduler.js';
import { DEFAULT_ADMIN_UUID } from '../../common/triton-defaults.js';
import { MockcloudError, toMockcloudError } from '../../common/errors.js';
import { failureFields, logFailure, type Logger } from '../../common/log.js';
import { isUuid } from '../../common/uuid.js';
import type { MockCn } from '../../mockcn/types.js';
import type { Vm } from '../../vmadm/types.js';
import { CounterBank } from './counters.js';
import { gzFamilies } from './gz-metrics.js';
import { formatFamilies } from './prometheus.js';
import { ListenerSet } from './listeners.js';
import { AddressIndex, agentIpOf, plainAddress } from './routing.js';
import { vmFamilies } from './vm-metrics.js';

const gzip = promisify(zlib.gzip);

/** Must match triton-cmon's lib/endpoints/metrics.js. */
export const CMON_OPTS_HEADER = 'x-joyent-cmon-opts';
export const CMON_AGENT_PORT = 9163;
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface CmonAgentOptions {
  /** 9163 like the real agent (CMON never reads another); 0 = ephemeral, for tests. */
  port: number;
  /**
   * Where to listen (listeners.ts): a list of IPs (default: the daemon's bind IP), e.g.
   * ['0.0.0.0'] when every CN has its own agent IP; or 'agent-ips' for one socket per
   * distinct `CN Agent IP` of the fleet.
   */
  bind?: readonly string[] | 'agent-ips';
  /** Owner of core zones, for requests without the cmon-opts header. */
  adminUuid: string;
  /** Counter state of VMs / CNs not scraped for this long is forgotten. */
  counterIdleMs: number;
}

export const DEFAULT_CMON_AGENT_OPTIONS: Readonly<CmonAgentOptions> = Object.freeze({
  port: CMON_AGENT_PORT,
  adminUuid: DEFAULT_ADMIN_UUID,
  counterIdleMs: 60 * 60_000,
});

export class CmonAgentPlugin implements CnAgentPlugin {
  readonly name = 'cmon-agent';
  readonly options: CmonAgentOptions;
  readonly counters = { vmScrapes: 0, gzScrapes: 0, notFound: 0, badRequest: 0, ambiguous: 0, errors: 0 };
  private readonly ctx: AgentPluginContext;
  private readonly log: Logger;
  private readonly bank = new CounterBank();
  private readonly index: AddressIndex;
  private readonly listeners: ListenerSet;
  private running = false;
  private readonly addressWatchers = new Set<() => void>();
  private pruneJob: ScheduledJob | undefined;

  constructor(ctx: AgentPluginContext, options: Partial<CmonAgentOptions> = {}) {
    this.ctx = ctx;
    this.options = { ...DEFAULT_CMON_AGENT_OPTIONS, ...options };
    this.log = ctx.log.child({ component: 'cmon-agent' });
    this.index = new AddressIndex(ctx.fleet);
    this.listeners = new ListenerSet(
      this.options.port,
      (req, res) => {
        this.handle(req, res).catch((err: unknown) => this.fail(res, toMockcloudError(err)));
      },
      this.log,
      () => this.addressesChanged(),
    );
  }

  /**
   * Call `fn` whenever `addresses()` changes: in 'agent-ips' mode a CN's socket opens when its
   * agents start, which for a CN created through booter is after it has joined the fleet.
   * Returns the unsubscribe.
   */
  watchAddresses(fn: () => void): () => void {
    this.addressWatchers.add(fn);
    return () => this.addressWatchers.delete(fn);
  }

  private addressesChanged(): void {
    for (const fn of this.addressWatchers) {
      try {
        fn();
      } catch (err) {
        this.log.error({ ...failureFields(err) }, 'a watcher of cmon-agent\'s addresses failed');
      }
    }
  }

  /** Every socket the agent listens on (after start; in 'agent-ips' mode, after `settled()`). */
  addresses(): { ip: string; port: number }[] {
    return this.listeners.addresses();
  }

  /** Resolves once every listener being opened for newly attached CNs is bound (or failed). */
  settled(): Promise<void> {
    return this.listeners.settled();
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const bind = this.options.bind ?? [this.ctx.bindIp];
    if (bind === 'agent-ips') {
      for (const cn of this.ctx.fleet.list()) this.openFor(cn);
      await this.listeners.settled();
    } else {
      for (const ip of bind) await this.listeners.open(ip);
    }
    this.schedulePrune();
    this.log.info({ addresses: this.addresses() }, 'cmon-agent listening');
  }

  async stop(): Promise<void> {
    this.running = false;
    this.ctx.scheduler.cancel(this.pruneJob);
    this.pruneJob = undefined;
    await this.listeners.closeAll();
  }

  attach(cn: MockCn): void {
    this.index.invalidate();
    if (this.running && this.options.bind === 'agent-ips') this.openFor(cn);
  }

  detach(uuid: string): Promise<void> | undefined {
    this.index.invalidate();
    this.bank.forgetPrefix(`gz:${uuid}`);
    return this.running && this.options.bind === 'agent-ips' ? this.closeUnused() : undefined;
  }

  private openFor(cn: MockCn): void {
    const ip = agentIpOf(cn);
    if (!ip || this.listeners.has(ip)) return;
    this.listeners.open(ip).catch((err: unknown) => {
      this.ctx.countError('cmon-agent.listen');
      this.log.error({ ...failureFields(err), server: cn.uuid, ip }, 'cmon-agent cannot listen on this CN\'s agent IP');
    });
  }

  /** 'agent-ips' mode: close the sockets of addresses no CN has any more. */
  private async closeUnused(): Promise<void> {
    const inUse = new Set<string>();
    for (const cn of this.ctx.fleet.list()) {
      const ip = agentIpOf(cn);
      if (ip) inUse.add(ip);
    }
    const unused = this.listeners.addresses().filter(({ ip }) => !inUse.has(ip));
    await Promise.all(unused.map(({ ip }) => this.listeners.close(ip)));
  }

  stats(): Record<string, number> {
    return { ...this.counters, counterScopes: this.bank.size };
  }

  private schedulePrune(): void {
    const every = Math.max(1000, Math.min(this.options.counterIdleMs, 10 * 60_000));
    this.pruneJob = this.ctx.scheduler.schedule(every, () => {
      this.bank.prune(Date.now() - this.options.counterIdleMs);
      if (this.running) this.schedulePrune();
    });
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://cmon-agent');
    const m = /^\/v1\/([^/]+)\/metrics\/?$/.exec(url.pathname);
    if (m) {
      if (req.method !== 'GET' && req.method !== 'HEAD') throw methodNotAllowed(req.method, url.pathname);
      const container = decodeURIComponent(m[1]!);
      let body: string;
      try {
        body = container === 'gz' ? this.gzMetrics(req) : this.vmMetrics(req, container);
      } catch (err) {
        await this.failText(req, res, toMockcloudError(err));
        return;
      }
      await this.sendMetrics(req, res, body);
      return;
    }
    if (url.pathname === '/v1/refresh' || url.pathname === '/v1/refresh/') {
      if (req.method !== 'POST') throw methodNotAllowed(req.method, url.pathname);
      req.resume();
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      return;
    }
    throw new MockcloudError('ResourceNotFound', `${url.pathname} does not exist`);
  }

  private vmMetrics(req: http.IncomingMessage, container: string): string {
    const header = req.headers[CMON_OPTS_HEADER];
    const isCoreZoneHeader = parseCmonOpts(Array.isArray(header) ? header[0] : header);
    const vm = isUuid(container) ? this.findVm(req, container.toLowerCase()) : undefined;
    if (!vm && isCoreZoneHeader === undefined && isUuid(container)) {
      // Without CMON's header the agent first loads the VM with node-vmadm to see whether it
      // is a core zone; that load's error is the answer (triton-cmon-agent
      // lib/instrumenter/lib/triton-metrics.js getVmInfo, node-vmadm lib/index.sunos.js load).
      this.counters.notFound++;
      throw new MockcloudError('InternalError', `vmadm load ${container} failed: No such zone`, { restCode: 'VmNotFound' });
    }
    if (!vm || vm.state !== 'running') {
      this.counters.notFound++;
      throw new MockcloudError('ResourceNotFound', 'container not found', { restCode: 'NotFound' });
    }
    this.counters.vmScrapes++;
    const isCoreZone = isCoreZoneHeader ?? this.looksCore(vm);
    return formatFamilies(vmFamilies({ vm, now: Date.now(), counters: this.bank, isCoreZone }));
  }

  private gzMetrics(req: http.IncomingMessage): string {
    const cn = this.addressedCn(req);
    this.counters.gzScrapes++;
    return formatFamilies(gzFamilies({ cn, now: Date.now(), counters: this.bank }));
  }

  /**
   * The VM on the CN the Host header names (a real agent knows only its own CN's zones), else
   * on the CN(s) this request reached; the whole fleet when no CN claims the address.
   */
  private findVm(req: http.IncomingMessage, uuid: string): Vm | undefined {
    const target = this.index.resolveHost(req.headers.host);
    let cns: MockCn[];
    if (target.kind === 'cn') cns = [target.cn];
    else if (target.kind === 'shared') cns = target.cns;
    else {
      const local = this.index.at(plainAddress(req.socket.localAddress));
      cns = local.length > 0 ? local : this.ctx.fleet.list();
    }
    for (const cn of cns) {
      const vm = cn.vms.get(uuid, { include_dni: true });
      if (vm) return vm;
    }
    return undefined;
  }

  private addressedCn(req: http.IncomingMessage): MockCn {
    const target = this.index.resolveHost(req.headers.host);
    if (target.kind === 'cn') return target.cn;
    if (target.kind === 'unknown-uuid') {
      this.counters.notFound++;
      throw new MockcloudError('ResourceNotFound', `server ${target.uuid} is not a mock CN of this daemon`);
    }
    const ip = target.kind === 'shared' ? target.ip : plainAddress(req.socket.localAddress);
    const local = target.kind === 'shared' ? target.cns : this.index.at(ip);
    if (local.length === 1) return local[0]!;
    if (local.length === 0 && this.ctx.fleet.size === 1) return this.ctx.fleet.list()[0]!;
    if (local.length === 0) {
      this.counters.notFound++;
      throw new MockcloudError('ResourceNotFound', `no mock CN has CN Agent IP ${ip}`);
    }
    this.counters.ambiguous++;
    throw new MockcloudError(
      'Conflict',
      `${local.length} mock CNs share IP ${ip}: address one by its Admin IP (Host: <Admin IP>:9163, as CMON does ` +
        'for a CN without a CN Agent IP) or its uuid (Host: <server_uuid>), or give every mock CN its own agent IP',
    );
  }

  /** Without CMON's header: the real agent's own test (admin-owned, with a core role tag). */
  private looksCore(vm: Vm): boolean {
    const tags = vm.tags ?? {};
    return vm.owner_uuid === this.options.adminUuid && (tags.smartdc_role !== undefined || tags.manta_role !== undefined);
  }

  private async sendMetrics(req: http.IncomingMessage, res: http.ServerResponse, text: string): Promise<void> {
    req.resume();
    const headers: http.OutgoingHttpHeaders = { 'content-type': PROMETHEUS_CONTENT_TYPE };
    let body: Buffer = Buffer.from(text, 'utf8');
    if (acceptsGzip(req.headers['accept-encoding'])) {
      body = await gzip(body);
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = String(body.length);
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  /** An error of the metrics handler: restify 4's text formatter writes the bare message. */
  private async failText(req: http.IncomingMessage, res: http.ServerResponse, err: MockcloudError): Promise<void> {
    this.count(err);
    req.resume();
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'text/plain' };
    let body: Buffer = Buffer.from(err.message, 'utf8');
    if (acceptsGzip(req.headers['accept-encoding'])) {
      body = await gzip(body);
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = String(body.length);
    res.writeHead(err.statusCode, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  private count(err: MockcloudError): void {
    if (err.statusCode >= 500 && err.restCode !== 'VmNotFound') {
      this.counters.errors++;
      logFailure(this.log, err, {}, 'cmon-agent request failed');
    } else if (err.code === 'BadRequest') {
      this.counters.badRequest++;
    }
  }

  private fail(res: http.ServerResponse, err: MockcloudError): void {
    this.count(err);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = JSON.stringify(err.toBody());
    res.writeHead(err.statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
}

/**
 * The `x-joyent-cmon-opts` header: base64 of JSON with a boolean `isCoreZone`. Undefined when
 * absent; a 400 when present but not that.
 */
export function parseCmonOpts(header: string | undefined): boolean | undefined {
  if (header === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    value = undefined;
  }
  const isCore = (value as { isCoreZone?: unknown } | null | undefined)?.isCoreZone;
  if (typeof isCore !== 'boolean') {
    throw new MockcloudError('BadRequest', `Error parsing ${CMON_OPTS_HEADER} header`);
  }
  return isCore;
}

function acceptsGzip(header: string | string[] | undefined): boolean {
  const text = Array.isArray(header) ? header.join(',') : header ?? '';
  return text.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function methodNotAllowed(method: string | undefined, path: string): MockcloudError {
  return new MockcloudError('MethodNotAllowed', `${method} is not allowed on ${path}`);
}

/** The plug-in factory the daemon calls once its shared resources exist. */
export function createCmonAgentPlugin(options: Partial<CmonAgentOptions> = {}): (ctx: AgentPluginContext) => CmonAgentPlugin {
  return (ctx) => new CmonAgentPlugin(ctx, options);
}
