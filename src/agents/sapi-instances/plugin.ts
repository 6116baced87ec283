/**
 * RFD 82 for mock CNs: every agent instance of every CN exists in SAPI, adopted under its
 * agent's service (type `agent`), and goes from SAPI with its CN.
 *
 * On a real CN each agent's install adopts its instance (the agents' npm/postinstall.sh
 * adopt_instance_if_necessary, sdc-cn-agent lib/backends/common.js adoptInstanceInSapi):
 * `GET /services?type=agent&name=<agent>`, then, unless `GET /instances/<uuid>` finds it,
 * `POST /instances {exists: true, service_uuid, uuid}`. An agent without a service is not
 * adopted (logged). Here:
 *
 *   attach      queues the CN; a run in the background (on the shared scheduler, a few seconds
 *               after the last attach, so a start's 10,000 attaches make one run) adopts what
 *               SAPI lacks. A run of many CNs lists each service's instances once instead of
 *               asking per instance. Failures are logged, counted (`sapi.adopt` in /status
 *               errors) and retried with backoff; nothing a CN does waits on SAPI.
 *   adopt       agent_install's new instance, at once (the task logs the outcome; a failure
 *               queues the CN for the background runs, the install still succeeds).
 *   release     a deleted CN's instances (its agents' and every instance uuid mockcloud derives
 *               for it) are deleted, each only while SAPI says it is that CN's
 *               (`params.server_uuid`; src/common/ownership.ts): another CN's is left alone and
 *               counted (`leftAlone`); what SAPI cannot take now is journalled and retried.
 *
 * All requests go through the daemon's shared HTTP client, bulk work in its background lane.
 */
import { builtinInstanceUuid, BUILTIN_AGENTS } from '../../mockcn/agents-dir.js';
import { instanceIsOfServer } from '../../common/ownership.js';
import type { AgentRecord, MockCn } from '../../mockcn/types.js';
import type { Logger } from '../../common/log.js';
import type { AgentPluginContext, CnAgentPlugin } from '../../runtime/agent-plugin.js';
import { schedulerNow, type ScheduledJob } from '../../runtime/scheduler.js';
import { PendingDeletes } from './pending-deletes.js';
import { SapiClient, type AgentInstance, type AgentServices } from './sapi-client.js';

export interface SapiInstancesOptions {
  /** Wait after an attach before a run, so CNs attached together are adopted together. */
  settleMs: number;
  /** Backoff of failed runs. */
  retryMinMs: number;
  retryMaxMs: number;
  /** From this many CNs in a run, each service's instances are listed once. */
  listThreshold: number;
  /** CNs worked on at once (their requests queue in the HTTP client's background lane). */
  chunkCns: number;
}

export const DEFAULT_SAPI_INSTANCES_OPTIONS: Readonly<SapiInstancesOptions> = Object.freeze({
  settleMs: 2000,
  retryMinMs: 1000,
  retryMaxMs: 60_000,
  listThreshold: 200,
  chunkCns: 32,
});

/** What adopting some of a CN's instances did, for agent_install's log. */
export interface AdoptResult {
  adopted: string[];
  present: string[];
  /** Agents SAPI has no (single) service for. */
  noService: string[];
}

export class SapiInstancesPlugin implements CnAgentPlugin {
  readonly name = 'sapi-instances';
  readonly options: SapiInstancesOptions;
  readonly counters = { adopted: 0, present: 0, deleted: 0, adoptFailures: 0, deleteFailures: 0, noService: 0, runs: 0, listings: 0, leftAlone: 0 };
  private readonly ctx: AgentPluginContext;
  private readonly log: Logger;
  private readonly sapi: SapiClient | undefined;
  private readonly deletes: PendingDeletes;
  /** CNs whose instances are to be checked and adopted. */
  private readonly pending = new Set<string>();
  /** CNs being removed: never adopted again. */
  private readonly removed = new Set<string>();
  /** agent_install's adoptions in flight, by CN: a release waits for them. */
  private readonly adopting = new Map<string, Set<Promise<unknown>>>();
  /** Agents without a service that were already logged. */
  private readonly warnedNoService = new Set<string>();
  private job: ScheduledJob | undefined;
  private running: Promise<void> | undefined;
  /** The CNs of the run's chunk in flight, and when its requests are done. */
  private chunk: { cns: Set<string>; done: Promise<unknown> } | undefined;
  private delay: number;
  private stopped = false;

  constructor(ctx: AgentPluginContext, options: Partial<SapiInstancesOptions> = {}) {
    this.ctx = ctx;
    this.options = { ...DEFAULT_SAPI_INSTANCES_OPTIONS, ...options };
    this.log = ctx.log.child({ component: 'sapi-instances' });
    this.sapi = ctx.urls.sapi ? new SapiClient(ctx.http, ctx.urls.sapi) : undefined;
    this.deletes = new PendingDeletes(ctx.dataDir);
    this.delay = this.options.retryMinMs;
  }

  async start(): Promise<void> {
    this.stopped = false;
    if (!this.sapi) return;
    const problem = await this.deletes.load();
    if (problem) this.log.warn(problem);
    if (this.deletes.size > 0) {
      this.log.info({ instances: this.deletes.size }, 'SAPI instances of deleted CNs still to delete');
      this.schedule(0);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.ctx.scheduler.cancel(this.job);
    this.job = undefined;
    await this.running;
  }

  attach(cn: MockCn): void {
    if (!this.sapi) return;
    this.removed.delete(cn.uuid);
    this.pending.add(cn.uuid);
    this.schedule(this.options.settleMs);
  }

  detach(uuid: string): void {
    this.pending.delete(uuid);
    this.removed.add(uuid);
  }

  stats(): Record<string, number> {
    return { ...this.counters, pendingCns: this.pending.size, pendingDeletes: this.deletes.size };
  }

  /**
   * Adopt these agents of a CN now (agent_install). Rejects when SAPI cannot be asked; the CN is
   * then queued for the background runs.
   */
  adopt(cn: MockCn, agents: readonly AgentRecord[]): Promise<AdoptResult> {
    if (!this.sapi || this.removed.has(cn.uuid)) return Promise.resolve({ adopted: [], present: [], noService: [] });
    const running = this.adoptNow(cn, agents);
    let set = this.adopting.get(cn.uuid);
    if (!set) this.adopting.set(cn.uuid, (set = new Set()));
    const mine = set;
    mine.add(running);
    void running.catch(() => undefined).finally(() => {
      mine.delete(running);
      if (mine.size === 0 && this.adopting.get(cn.uuid) === mine) this.adopting.delete(cn.uuid);
    });
    return running;
  }

  private async adoptNow(cn: MockCn, agents: readonly AgentRecord[]): Promise<AdoptResult> {
    const result: AdoptResult = { adopted: [], present: [], noService: [] };
    const sapi = this.sapi!;
    try {
      const services = await sapi.agentServices(false);
      for (const inst of instancesOf(cn, agents)) {
        const svc = this.serviceOf(services, inst.name);
        if (!svc) result.noService.push(inst.name);
        else if (await sapi.exists(inst.uuid, false)) result.present.push(inst.uuid);
        else {
          await sapi.adopt(inst, svc, false);
          this.counters.adopted++;
          result.adopted.push(inst.uuid);
        }
      }
      return result;
    } catch (err) {
      this.counters.adoptFailures++;
      this.ctx.countError('sapi.adopt');
      this.pending.add(cn.uuid);
      this.schedule(this.options.retryMinMs);
      throw err;
    }
  }

  /**
   * A CN is being deleted: delete its instances from SAPI. Returns warnings (what could not be
   * deleted now is journalled and retried); never rejects for SAPI's sake.
   */
  async release(cn: Pick<MockCn, 'uuid' | 'agents'>): Promise<string[]> {
    this.detach(cn.uuid);
    // What is being adopted for it now lands first, then is deleted with the rest.
    if (this.chunk?.cns.has(cn.uuid)) await this.chunk.done.catch(() => undefined);
    await Promise.allSettled([...(this.adopting.get(cn.uuid) ?? [])]);
    if (!this.sapi) return [];
    // Its agents' instances, and every instance uuid mockcloud derives for it (an agent
    // uninstalled since it was adopted leaves no file naming its instance).
    const uuids = new Set<string>();
    for (const a of cn.agents ?? []) if (a.uuid) uuids.add(a.uuid);
    for (const a of BUILTIN_AGENTS) uuids.add(builtinInstanceUuid(cn.uuid, a.name));
    const failed: string[] = [];
    let firstError = '';
    await Promise.all(
      [...uuids].map(async (u) => {
        try {
          await this.deleteIfOf(u, cn.uuid);
        } catch (err) {
          failed.push(u);
          firstError ||= (err as Error).message;
          this.counters.deleteFailures++;
          this.ctx.countError('sapi.delete');
        }
      }),
    );
    this.removed.delete(cn.uuid);
    if (failed.length === 0) return [];
    await this.deletes.add(failed.map((u): [string, string] => [u, cn.uuid]));
    this.schedule(this.options.retryMinMs);
    return [`SAPI: ${failed.length} instance(s) not deleted yet (${firstError}); retried in the background`];
  }

  // ---- the background runs

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.job && !this.job.cancelled && this.job.due <= schedulerNow() + ms) return;
    this.ctx.scheduler.cancel(this.job);
    this.job = this.ctx.scheduler.schedule(ms, () => {
      this.job = undefined;
      if (this.running) {
        // One run at a time; this one follows.
        void this.running.then(() => this.schedule(0));
        return;
      }
      this.running = this.run().finally(() => {
        this.running = undefined;
      });
    });
  }

  private async run(): Promise<void> {
    this.counters.runs++;
    let ok = true;
    try {
      ok = (await this.retryDeletes()) && ok;
      if (this.pending.size > 0) ok = (await this.adoptPending()) && ok;
    } catch (err) {
      ok = false;
      this.log.warn({ err }, 'SAPI instance run failed');
    }
    if (ok) this.delay = this.options.retryMinMs;
    else this.delay = Math.min(this.options.retryMaxMs, this.delay * 2);
    if (this.deletes.size > 0 || this.pending.size > 0) this.schedule(ok ? 0 : this.delay);
  }

  private async retryDeletes(): Promise<boolean> {
    if (this.deletes.size === 0 || !this.sapi) return true;
    const all = [...this.deletes.instances];
    const done: string[] = [];
    // A slice at a time: a backlog of thousands of deleted CNs never queues all its requests at once.
    const slice = this.options.chunkCns * 8;
    for (let i = 0; i < all.length && !this.stopped; i += slice) {
      await Promise.all(
        all.slice(i, i + slice).map(async ([u, server]) => {
          try {
            await this.deleteIfOf(u, server);
            done.push(u);
          } catch {
            this.counters.deleteFailures++;
            this.ctx.countError('sapi.delete');
          }
        }),
      );
    }
    await this.deletes.remove(done);
    if (done.length > 0) this.log.info({ deleted: done.length, left: this.deletes.size }, 'deleted SAPI instances of deleted CNs');
    return this.deletes.size === 0;
  }

  /**
   * Delete an instance of a deleted CN, once SAPI shows it is that CN's (`params.server_uuid`).
   * An entry an older version journalled names no CN: its instance must be one whose uuid
   * mockcloud derives from the CN SAPI names. Anything else is left alone and counted.
   */
  private async deleteIfOf(uuid: string, server: string | undefined): Promise<void> {
    const inst = await this.sapi!.get(uuid, true);
    if (!inst) return;
    const named = (inst.params as { server_uuid?: unknown } | undefined)?.server_uuid;
    const ours = server
      ? instanceIsOfServer(inst, server)
      : typeof named === 'string' && BUILTIN_AGENTS.some((a) => builtinInstanceUuid(named, a.name) === uuid);
    if (!ours) {
      this.counters.leftAlone++;
      this.log.warn(
        { instance: uuid, server, sapiServer: named },
        `SAPI instance ${uuid} is not the deleted CN's (params.server_uuid ${JSON.stringify(named)}): left alone`,
      );
      return;
    }
    if (await this.sapi!.delete(uuid)) this.counters.deleted++;
  }

  private async adoptPending(): Promise<boolean> {
    const batch = [...this.pending];
    this.pending.clear();
    const requeue = (uuids: Iterable<string>): void => {
      for (const u of uuids) if (!this.removed.has(u)) this.pending.add(u);
    };
    const cns = batch.map((u) => this.ctx.fleet.get(u)).filter((cn): cn is MockCn => cn !== undefined && !this.removed.has(cn.uuid));
    let services: AgentServices;
    let known: Set<string> | undefined;
    try {
      services = await this.sapi!.agentServices(true);
      if (cns.length >= this.options.listThreshold) known = await this.listKnown(services, cns);
    } catch (err) {
      this.counters.adoptFailures++;
      this.ctx.countError('sapi.adopt');
      this.log.warn({ err: (err as Error).message, cns: cns.length }, 'cannot ask SAPI for agent services and instances; retrying');
      requeue(batch);
      return false;
    }
    const before = { ...this.counters };
    let failed = 0;
    let firstError = '';
    for (let i = 0; i < cns.length; i += this.options.chunkCns) {
      if (this.stopped) {
        requeue(cns.slice(i).map((cn) => cn.uuid));
        break;
      }
      const live = cns.slice(i, i + this.options.chunkCns).filter((cn) => !this.removed.has(cn.uuid) && this.ctx.fleet.get(cn.uuid) === cn);
      const done = Promise.all(
        live.map((cn) =>
          this.adoptAll(cn, services, known).catch((err: unknown) => {
            requeue([cn.uuid]);
            if (this.stopped) return;
            failed++;
            firstError ||= (err as Error).message;
            this.counters.adoptFailures++;
            this.ctx.countError('sapi.adopt');
          }),
        ),
      );
      this.chunk = { cns: new Set(live.map((cn) => cn.uuid)), done };
      await done;
      this.chunk = undefined;
    }
    const summary = {
      cns: cns.length,
      adopted: this.counters.adopted - before.adopted,
      present: this.counters.present - before.present,
      failed,
      listed: known !== undefined,
    };
    if (failed > 0) this.log.warn({ ...summary, err: firstError }, 'some agent instances could not be adopted into SAPI; retrying');
    else this.log.info(summary, 'agent instances in SAPI');
    return failed === 0;
  }

  /** Instance uuids SAPI has under the services these CNs' agents belong to. */
  private async listKnown(services: AgentServices, cns: MockCn[]): Promise<Set<string>> {
    const wanted = new Set<string>();
    for (const cn of cns) for (const a of cn.agents ?? []) {
      const svc = services.get(a.name);
      if (svc) wanted.add(svc);
    }
    const known = new Set<string>();
    for (const svc of wanted) {
      for (const u of await this.sapi!.instanceUuids(svc)) known.add(u);
      this.counters.listings++;
    }
    return known;
  }

  /** adopt_instance_if_necessary for every agent of one CN, one request at a time. */
  private async adoptAll(cn: MockCn, services: AgentServices, known: Set<string> | undefined): Promise<void> {
    for (const inst of instancesOf(cn, cn.agents ?? [])) {
      if (this.removed.has(cn.uuid)) return;
      if (this.stopped) throw new Error('stopping');
      const svc = this.serviceOf(services, inst.name);
      if (!svc) continue;
      if (known ? known.has(inst.uuid) : await this.sapi!.exists(inst.uuid, true)) {
        this.counters.present++;
        continue;
      }
      await this.sapi!.adopt(inst, svc, true);
      this.counters.adopted++;
    }
  }

  private serviceOf(services: AgentServices, name: string): string | undefined {
    const svc = services.get(name);
    if (svc) return svc;
    this.counters.noService++;
    if (!this.warnedNoService.has(name)) {
      this.warnedNoService.add(name);
      this.log.warn(
        { agent: name },
        svc === null ? `SAPI has more than one service named ${name}: not adopting` : `SAPI has no service for agent ${name}: not adopting`,
      );
    }
    return undefined;
  }
}

function instancesOf(cn: MockCn, agents: readonly AgentRecord[]): AgentInstance[] {
  const out: AgentInstance[] = [];
  for (const a of agents) {
    if (!a.uuid) continue;
    out.push({ name: a.name, uuid: a.uuid, serverUuid: cn.uuid, ...(a.image_uuid ? { imageUuid: a.image_uuid } : {}) });
  }
  return out;
}

/** The plug-in factory the daemon calls once its shared resources exist. */
export function createSapiInstancesPlugin(options: Partial<SapiInstancesOptions> = {}): (ctx: AgentPluginContext) => SapiInstancesPlugin {
  return (ctx) => new SapiInstancesPlugin(ctx, options);
}
