/**
 * firewaller on every mock CN (sdc-firewaller-agent lib/agent.js, lib/tasks/*, lib/fwapi.js,
 * lib/vmapi.js, lib/pred.js, lib/cache.js; smartos-live src/fw), holding each CN's fwadm state
 * (store.ts) and doing toward FWAPI and VMAPI what the real agent does:
 *
 * - **sync** (at a CN's start, every 30 minutes, on FWAPI's `sync` update, and here also after
 *   the update stream was cut, when updates may have been missed): per owner of the CN's VMs
 *   with `firewall_enabled`, `POST /resolve {owner_uuid, vms, tags}` to FWAPI, then the
 *   remote VMs the answer names from VMAPI (`GET /vms?predicate=` of pred.js: the owner's
 *   active VMs on other servers, by tag, uuid or all), stored with the rules; rules from FWAPI
 *   and remote VMs the round did not resolve are deleted. A failed sync is tried again with
 *   the agent's backoff: 100 ms doubling to 6 s, 5 retries (config.json `retry`).
 * - **updates** from FWAPI's stream (stream.ts), each applied to every CN in order, one task at
 *   a time per CN (the agent's queue of concurrency 1): `fw.add_rule` / `fw.update_rule` stored
 *   when the rule is enabled and applies to a local VM with its firewall enabled (with the
 *   remote VMs of its other side not fetched yet), an update of a stored rule always;
 *   `fw.del_rule` deleted; `vm.add` / `vm.update` of a local VM resolve its rules again, of a
 *   remote VM stored (or updated) when a stored non-global rule names it; `vm.delete` drops
 *   the remote VM. A rule that does not parse is logged and skipped.
 *
 * What fwadm would print on a CN (`fwadm list`, `fwadm vms <rule>`, `fwadm rules <vm>`,
 * `fwadm status <vm>`, `fwadm list-rvms`) is `fwadm()`. VMs as firewaller sees them are
 * vms.ts, what a sync asks FWAPI and VMAPI sync-queries.ts, what it already asked remote-cache.ts.
 */
import { HttpStatusError } from '../../common/http-client.js';
import { failureFields, type Logger } from '../../common/log.js';
import { newUuid } from '../../common/uuid.js';
import type { MockCn } from '../../mockcn/types.js';
import type { AgentPluginContext, CnAgentPlugin } from '../../runtime/agent-plugin.js';
import { doublingDelay } from '../../runtime/backoff.js';
import { DueQueue } from '../../runtime/due-queue.js';
import { fwadmOutput, type FwadmOutput } from './fwadm.js';
import { parseRule, remoteTargets, ruleAppliesTo, ruleNamesRemote, type ParsedRule, type RemoteTargets, type RemoteVm, type RuleData } from './rules.js';
import { addToCache, missingTargets, type RemoteCache } from './remote-cache.js';
import { FwStore } from './store.js';
import { UpdateStream, type StreamMessage } from './stream.js';
import { createPredicate, resolvePayloads, type ResolvePayload } from './sync-queries.js';
import { fillRvm, fwVm, localVms, rvmFromVm } from './vms.js';

export interface FirewallerOptions {
  /** config.json `syncInterval` (30 minutes). */
  syncIntervalMs: number;
  /** config.json `retry`: 100 ms doubling to 6 s, 5 retries. */
  retryMinMs: number;
  retryMaxMs: number;
  retries: number;
  /** CNs starting together sync within this. */
  startSpreadMs: number;
  tickMs: number;
  /** FWAPI's fast port (config.json `fwapi.fast.port`). */
  fastPort: number;
}

export const DEFAULT_FIREWALLER_OPTIONS: FirewallerOptions = {
  syncIntervalMs: 30 * 60_000,
  retryMinMs: 100,
  retryMaxMs: 6000,
  retries: 5,
  startSpreadMs: 10_000,
  tickMs: 1000,
  fastPort: 2020,
};

interface CnState {
  cn: MockCn;
  store: FwStore;
  loaded: Promise<void>;
  chain: Promise<void>;
  cache: RemoteCache;
  lastSync?: number;
  lastSyncError?: string;
  recent: string[];
}

const RECENT_TASKS = 50;

export class FirewallerPlugin implements CnAgentPlugin {
  readonly name = 'firewaller';
  readonly options: FirewallerOptions;
  private readonly ctx: AgentPluginContext;
  private readonly log: Logger;
  private readonly cns = new Map<string, CnState>();
  private readonly due: DueQueue<string>;
  private stream: UpdateStream | undefined;
  private lastId: number | undefined;
  private stopped = false;
  readonly counters = {
    syncs: 0,
    syncFailures: 0,
    syncRetries: 0,
    resolveRequests: 0,
    vmapiRequests: 0,
    updates: 0,
    tasks: 0,
    taskFailures: 0,
    rulesAdded: 0,
    rulesDeleted: 0,
    rvmsAdded: 0,
    rvmsDeleted: 0,
    badRules: 0,
    storesRebuilt: 0,
    resyncs: 0,
  };

  constructor(ctx: AgentPluginContext, options: Partial<FirewallerOptions> = {}) {
    this.ctx = ctx;
    this.options = { ...DEFAULT_FIREWALLER_OPTIONS, ...options };
    this.log = ctx.log.child({ component: 'firewaller' });
    this.due = new DueQueue(ctx.scheduler, this.options.tickMs, (uuids) => {
      for (const u of uuids) this.enqueueSync(u, newUuid());
    });
  }

  private get fwapi(): string | undefined {
    return this.ctx.urls.fwapi;
  }

  start(): void {
    this.stopped = false;
    if (!this.fwapi) return;
    this.due.start();
    const fast = new URL(this.ctx.urls.fwapiFast ?? `tcp://${new URL(this.fwapi).hostname}:${this.options.fastPort}`);
    this.stream = new UpdateStream({
      host: fast.hostname.replace(/^\[|\]$/g, ''),
      port: Number(fast.port || this.options.fastPort),
      clientId: newUuid(),
      scheduler: this.ctx.scheduler,
      log: this.log,
      onMessage: (m) => this.onMessage(m),
      onStart: (first) => {
        if (first) return;
        // Updates sent while the stream was down are lost to us (FWAPI drops them once sent):
        // every CN syncs again, spread out.
        this.counters.resyncs++;
        this.resyncAll('update stream reconnected');
      },
    });
    this.stream.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.due.stop();
    this.stream?.stop();
    this.stream = undefined;
    await Promise.all([...this.cns.values()].map((st) => st.chain.catch(() => undefined)));
  }

  attach(cn: MockCn): void {
    if (!this.fwapi) return;
    const store = new FwStore(FwStore.fileOf(cn.paths.dir));
    const st: CnState = { cn, store, loaded: Promise.resolve(), chain: Promise.resolve(), cache: new Map(), recent: [] };
    st.loaded = store.load().then(
      (res) => {
        if (res === 'corrupt') {
          this.counters.storesRebuilt++;
          this.log.warn({ server: cn.uuid, file: store.file }, 'firewall state unreadable: set aside, rebuilt from FWAPI');
        }
      },
      (err: unknown) => this.log.error({ server: cn.uuid, ...failureFields(err) }, 'reading firewall state failed'),
    );
    st.chain = st.loaded;
    this.cns.set(cn.uuid, st);
    this.due.set(cn.uuid, Math.random() * this.options.startSpreadMs);
  }

  /** Resolves when the CN's work in flight has ended (each step checks it is still attached): no save lands in a removed CN's dir. */
  detach(uuid: string): Promise<void> | undefined {
    const chain = this.cns.get(uuid)?.chain;
    this.cns.delete(uuid);
    this.due.delete(uuid);
    return chain?.catch(() => undefined);
  }

  /** Down: the agent is not running (updates are missed); up: the start-up sync again. */
  powerChanged(cn: MockCn): void {
    if (this.cns.has(cn.uuid)) this.due.followPower(cn.uuid, cn.power === 'down', this.options.startSpreadMs);
  }

  stats(): Record<string, number> {
    let rules = 0;
    let rvms = 0;
    for (const st of this.cns.values()) {
      rules += st.store.rules.size;
      rvms += st.store.rvms.size;
    }
    return {
      ...this.counters,
      rules,
      rvms,
      streamConnected: this.stream?.connected ? 1 : 0,
      streamConnects: this.stream?.stats.connects ?? 0,
      streamMessages: this.stream?.stats.messages ?? 0,
    };
  }

  describe(uuid: string): Record<string, unknown> | undefined {
    const st = this.cns.get(uuid);
    if (!st) return undefined;
    return { fwRules: st.store.rules.size, fwRvms: st.store.rvms.size };
  }

  /** The CN's stored rules and remote VMs (tests, the control API). */
  state(uuid: string): { rules: RuleData[]; rvms: RemoteVm[]; recent: string[]; lastSync: string | null } | undefined {
    const st = this.cns.get(uuid);
    if (!st) return undefined;
    return {
      rules: [...st.store.rules.values()],
      rvms: [...st.store.rvms.values()],
      recent: [...st.recent],
      lastSync: st.lastSync === undefined ? null : new Date(st.lastSync).toISOString(),
    };
  }

  /** Everything queued for a CN so far is done. */
  async settled(uuid: string): Promise<void> {
    await this.cns.get(uuid)?.chain.catch(() => undefined);
  }

  /** What `fwadm <args>` prints on the CN (fwadm.ts). */
  fwadm(uuid: string, args: readonly string[]): FwadmOutput | undefined {
    const st = this.cns.get(uuid);
    if (!st) return undefined;
    return fwadmOutput({ rules: [...st.store.rules.values()], rvms: [...st.store.rvms.values()], vms: st.cn.vms.list() }, args);
  }

  // ---- updates

  private onMessage(m: StreamMessage): void {
    if (this.stopped) return;
    this.counters.updates++;
    if (typeof m.id === 'number') {
      if (this.lastId !== undefined && m.id > this.lastId + 1) {
        this.counters.resyncs++;
        this.resyncAll(`updates ${this.lastId + 1}-${m.id - 1} were not received`);
      }
      this.lastId = Math.max(this.lastId ?? 0, m.id);
    }
    const reqId = m.req_id ?? newUuid();
    if (m.name === 'ping') return;
    if (m.name === 'sync') {
      for (const uuid of this.cns.keys()) this.enqueueSync(uuid, reqId);
      return;
    }
    const value = m.value as Record<string, unknown> | undefined;
    if (!value || typeof value !== 'object') {
      this.log.warn({ message: m }, 'Received message without value property: ignoring');
      return;
    }
    let task: ((st: CnState) => Promise<void>) | undefined;
    switch (m.name) {
      case 'fw.add_rule':
      case 'fw.update_rule':
        task = (st) => this.ruleChanged(st, value as RuleData, m.name === 'fw.add_rule', reqId);
        break;
      case 'fw.del_rule':
        task = (st) => this.ruleDeleted(st, value as RuleData);
        break;
      case 'vm.add':
      case 'vm.update':
        task = (st) => this.vmChanged(st, value, m.name === 'vm.add', reqId);
        break;
      case 'vm.delete':
        task = (st) => this.vmDeleted(st, value);
        break;
      default:
        this.log.warn({ message: m }, 'Received unknown message type: ignoring');
        return;
    }
    for (const st of this.cns.values()) this.enqueue(st, reqId, m.name, () => task(st));
  }

  private resyncAll(why: string): void {
    this.log.info({ cns: this.cns.size, why }, 'syncing every CN with FWAPI');
    for (const uuid of this.cns.keys()) this.due.set(uuid, Math.random() * this.options.startSpreadMs);
  }

  private enqueue(st: CnState, reqId: string, name: string, fn: () => Promise<void>): void {
    st.chain = st.chain.then(async () => {
      if (this.cns.get(st.cn.uuid) !== st || this.stopped || st.cn.power === 'down') return;
      this.counters.tasks++;
      try {
        await fn();
      } catch (err) {
        // The CN was removed while the task ran (its store is gone with it): nothing failed.
        if (this.cns.get(st.cn.uuid) !== st) return;
        this.counters.taskFailures++;
        this.log.error({ server: st.cn.uuid, req_id: reqId, ...failureFields(err) }, `Error running task "${name}"`);
      }
      st.recent.unshift(reqId);
      if (st.recent.length > RECENT_TASKS) st.recent.pop();
    });
  }

  private enqueueSync(uuid: string, reqId: string): void {
    const st = this.cns.get(uuid);
    if (!st) return;
    this.due.delete(uuid);
    this.enqueue(st, reqId, 'sync', async () => {
      try {
        await this.syncWithRetry(st, reqId);
      } finally {
        if (this.cns.get(uuid) === st) this.due.set(uuid, this.options.syncIntervalMs);
      }
    });
  }

  private parse(st: CnState, r: RuleData): ParsedRule | undefined {
    try {
      return parseRule(r);
    } catch (err) {
      this.counters.badRules++;
      this.log.warn({ server: st.cn.uuid, rule: r, err: (err as Error).message }, 'rule does not parse: skipped');
      return undefined;
    }
  }

  /** vmapi.js populateRemoteVMs, then fw.add / fw.update (tasks/add-rule.js, update-rule.js). */
  private async ruleChanged(st: CnState, value: RuleData, add: boolean, reqId: string): Promise<void> {
    if (add && !value.enabled) return;
    const p = this.parse(st, value);
    if (!p) return;
    const owner = typeof value.owner_uuid === 'string' ? value.owner_uuid : undefined;
    const vms = localVms(st.cn).filter((v) => !owner || v.owner_uuid === owner);
    const affects = vms.some((v) => v.enabled && ruleAppliesTo(p.fw, v));
    if (!affects) {
      if (!add && st.store.rules.has(value.uuid)) {
        st.store.rules.set(value.uuid, { ...value, created_by: 'fwapi' });
        await st.store.save();
      }
      return;
    }
    const rvms = owner ? await this.fetchMissing(st, owner, remoteTargets(p.fw, vms), reqId) : [];
    if (!st.store.rules.has(value.uuid)) this.counters.rulesAdded++;
    st.store.rules.set(value.uuid, { ...value, created_by: 'fwapi' });
    for (const r of rvms) this.putRvm(st, r);
    await st.store.save();
  }

  private async ruleDeleted(st: CnState, value: RuleData): Promise<void> {
    if (typeof value.uuid !== 'string' || !st.store.rules.delete(value.uuid)) return;
    this.counters.rulesDeleted++;
    await st.store.save();
  }

  /** tasks/vm-add.js, vm-update.js: a local VM resolves again; a remote one is kept when a rule names it. */
  private async vmChanged(st: CnState, value: Record<string, unknown>, add: boolean, reqId: string): Promise<void> {
    const uuid = typeof value.uuid === 'string' ? value.uuid : undefined;
    if (!uuid) return;
    const local = st.cn.vms.get(uuid);
    if (local) {
      const vm = fwVm(local);
      if (!vm.enabled || local.state === 'failed') return;
      const payloads = resolvePayloads([vm]);
      if (payloads[0]) await this.resolve(st, payloads[0], reqId, undefined);
      await st.store.save();
      return;
    }
    const owner = typeof value.owner_uuid === 'string' ? value.owner_uuid : undefined;
    const known = st.store.rvms.get(uuid);
    if (known && !add) {
      this.putRvm(st, fillRvm(value, known));
      await st.store.save();
      return;
    }
    const candidate = add ? rvmFromVm(value) : fillRvm(value, { uuid, ips: [], ...(owner ? { owner_uuid: owner } : {}) });
    const named = [...st.store.rules.values()].some((r) => {
      const p = this.parse(st, r);
      return p !== undefined && !p.fw.global && ruleNamesRemote(p.fw, candidate);
    });
    if (!named) return;
    let rvm = candidate;
    if (!add || rvm.ips.length === 0) {
      const fetched = await this.vmapiGet(uuid, reqId);
      if (!fetched) return;
      rvm = fetched;
    }
    this.putRvm(st, rvm);
    await st.store.save();
  }

  private async vmDeleted(st: CnState, value: Record<string, unknown>): Promise<void> {
    if (typeof value.uuid !== 'string' || !st.store.rvms.delete(value.uuid)) return;
    this.counters.rvmsDeleted++;
    await st.store.save();
  }

  private putRvm(st: CnState, rvm: RemoteVm): void {
    if (!st.store.rvms.has(rvm.uuid)) this.counters.rvmsAdded++;
    st.store.rvms.set(rvm.uuid, rvm);
  }

  // ---- sync

  private async syncWithRetry(st: CnState, reqId: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.sync(st, reqId);
        st.lastSync = Date.now();
        delete st.lastSyncError;
        this.counters.syncs++;
        return;
      } catch (err) {
        st.lastSyncError = (err as Error).message;
        // Removed meanwhile, or the daemon stopping: nothing to sync, nothing wrong.
        if (this.cns.get(st.cn.uuid) !== st || this.stopped) return;
        if (attempt >= this.options.retries) {
          this.counters.syncFailures++;
          this.ctx.countError('firewaller.sync');
          this.log.error({ server: st.cn.uuid, req_id: reqId, ...failureFields(err), attempts: attempt + 1 }, 'sync failed');
          return;
        }
        this.counters.syncRetries++;
        const delay = doublingDelay(this.options.retryMinMs, this.options.retryMaxMs, attempt);
        this.log.debug({ server: st.cn.uuid, attempt, delay }, 'sync attempted');
        await new Promise<void>((resolve) => this.ctx.scheduler.schedule(delay, resolve));
      }
    }
  }

  /** tasks/sync.js: resolve every owner's rules, then drop what FWAPI no longer has. */
  private async sync(st: CnState, reqId: string): Promise<void> {
    const resolved = { rules: new Set<string>(), vms: new Set<string>() };
    const vms = localVms(st.cn);
    let failure: Error | undefined;
    for (const payload of resolvePayloads(vms)) {
      try {
        await this.resolve(st, payload, reqId, resolved);
      } catch (err) {
        failure ??= err as Error;
      }
    }
    if (failure) {
      await st.store.save();
      throw failure;
    }
    for (const [uuid, r] of st.store.rules) {
      if (r.created_by === 'fwapi' && !resolved.rules.has(uuid)) {
        st.store.rules.delete(uuid);
        this.counters.rulesDeleted++;
      }
    }
    for (const uuid of [...st.store.rvms.keys()]) {
      if (!resolved.vms.has(uuid)) {
        st.store.rvms.delete(uuid);
        this.counters.rvmsDeleted++;
      }
    }
    await st.store.save();
  }

  /** fwapi.js resolve: POST /resolve, the remote VMs from VMAPI, fw.update. */
  private async resolve(st: CnState, payload: ResolvePayload, reqId: string, resolved: { rules: Set<string>; vms: Set<string> } | undefined): Promise<void> {
    this.counters.resolveRequests++;
    const res = await this.ctx.http.call<Resolved>({
      method: 'POST',
      url: `${this.fwapi}/resolve`,
      headers: { 'x-request-id': reqId },
      body: payload,
      background: true,
    });
    const answer = res.body;
    if (!answer || !Array.isArray(answer.rules) || answer.rules.length === 0) return;
    const owner = answer.owner_uuid ?? payload.owner_uuid;
    addToCache(st.cache, owner, answer);
    const rvms = owner && (answer.allVMs || answer.vms?.length || (answer.tags && Object.keys(answer.tags).length > 0))
      ? await this.vmapiList(st.cn.uuid, owner, answer, reqId)
      : [];
    for (const r of answer.rules) {
      if (!this.parse(st, r)) continue;
      if (!st.store.rules.has(r.uuid)) this.counters.rulesAdded++;
      st.store.rules.set(r.uuid, { ...r, created_by: 'fwapi' });
      resolved?.rules.add(r.uuid);
    }
    for (const v of rvms) {
      this.putRvm(st, v);
      resolved?.vms.add(v.uuid);
    }
  }

  /** vmapi.js populateRemoteVMs: only targets not asked of VMAPI before (cache.js missing). */
  private async fetchMissing(st: CnState, owner: string, targets: RemoteTargets, reqId: string): Promise<RemoteVm[]> {
    if (!targets.allVMs && !targets.vms?.length && !(targets.tags && Object.keys(targets.tags).length)) return [];
    const missing = missingTargets(st.cache, owner, targets);
    if (!missing) return [];
    const rvms = await this.vmapiList(st.cn.uuid, owner, missing, reqId);
    addToCache(st.cache, owner, missing);
    return rvms;
  }

  /** vmapi.js listVMs with pred.js createPred: the owner's active VMs elsewhere, by target. */
  private async vmapiList(serverUuid: string, owner: string, f: RemoteTargets, reqId: string): Promise<RemoteVm[]> {
    const vmapi = this.ctx.urls.vmapi;
    if (!vmapi) return [];
    this.counters.vmapiRequests++;
    const predicate = createPredicate(owner, serverUuid, f);
    const res = await this.ctx.http.call<Record<string, unknown>[]>({
      method: 'GET',
      url: `${vmapi}/vms?predicate=${encodeURIComponent(JSON.stringify(predicate))}`,
      headers: { 'x-request-id': reqId },
      background: true,
    });
    const out: RemoteVm[] = [];
    for (const vm of Array.isArray(res.body) ? res.body : []) {
      if (vm.server_uuid === serverUuid) continue;
      const rvm = rvmFromVm(vm);
      if (rvm.ips.length > 0) out.push(rvm);
    }
    return out;
  }

  private async vmapiGet(uuid: string, reqId: string): Promise<RemoteVm | undefined> {
    const vmapi = this.ctx.urls.vmapi;
    if (!vmapi) return undefined;
    this.counters.vmapiRequests++;
    try {
      const res = await this.ctx.http.call<Record<string, unknown>>({ method: 'GET', url: `${vmapi}/vms/${uuid}`, headers: { 'x-request-id': reqId }, background: true });
      const rvm = rvmFromVm(res.body);
      return rvm.ips.length > 0 ? rvm : undefined;
    } catch (err) {
      if (err instanceof HttpStatusError && err.statusCode === 404) return undefined;
      throw err;
    }
  }
}

interface Resolved extends RemoteTargets {
  rules: RuleData[];
  owner_uuid?: string;
}

export function createFirewallerPlugin(options: Partial<FirewallerOptions> = {}): (ctx: AgentPluginContext) => FirewallerPlugin {
  return (ctx) => new FirewallerPlugin(ctx, options);
}

