/**
 * net-agent for every mock CN: the CN's NICs and its VMs' NICs in NAPI, and NAPI's network
 * properties in the VMs (vm-net-agent-spec §3, §5 items 6-11; RFD 28).
 *
 * ONE plug-in object serves the fleet:
 *   - per CN a `CnNet` (its NicTracks, its VMs' MACs, per-VM push state); nothing that ticks;
 *   - per NIC a single-flight reconciler (nic-reconciler.ts), per VM a single-flight writer
 *     (vm-push.ts); retries and periodic passes are jobs on the shared Scheduler;
 *   - ONE NAPI changefeed connection for the daemon (changefeed.ts) and ONE poller per
 *     referenced network (network-watch.ts), instead of one of each per CN;
 *   - all HTTP through the shared client, User-Agent `net-agent/<ver> (node/<ver>) server/<cn>`.
 *
 * When things happen:
 *   first pass    (per CN, spread over `startSpreadMs`) the CN's NICs from sysinfo and its VMs,
 *                 each GET from NAPI, then created / claimed / updated as needed;
 *   VM events     create/modify → the VM's NICs again (new ones created, gone ones deleted with
 *                 If-Match, state pushed) and the VM reconsidered for push-down; delete → its
 *                 NICs released; a VM that becomes do_not_inventory is forgotten, not released;
 *   changefeed    a NIC item re-reads that NIC; a network item re-reads every NIC on it;
 *                 a (re)connect re-reads everything;
 *   periodically  every network (shared poll, `networkPollMs`) and every NIC (`fullPassIntervalMs`).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { AgentPluginContext, CnAgentPlugin } from '../../runtime/agent-plugin.js';
import { Scheduler } from '../../runtime/scheduler.js';
import { writeFileDurable } from '../../common/durable-file.js';
import { failureFields, logFailure, type Logger } from '../../common/log.js';
import { isUuid, newUuid } from '../../common/uuid.js';
import type { MockCn } from '../../mockcn/types.js';
import type { Vm, VmEvent } from '../../vmadm/types.js';
import { NETWORK_SUBRESOURCES, NIC_ANTI_SPOOF_FLAGS } from '../../common/changefeed/protocol.js';
import { ChangefeedListener, type ChangefeedItem, type ChangefeedResource } from './changefeed.js';
import { normaliseMac, RELEVANT_VM_PATHS, sameLocal, serverLocalNics, vmLocalNics, type LocalNic, type NapiNic } from './fields.js';
import { NapiCalls, netAgentUserAgent } from './napi.js';
import { NetworkWatch } from './network-watch.js';
import { NicReconciler, type NicCounters } from './nic-reconciler.js';
import { resolveNetAgentOptions, type NetAgentOptions } from './options.js';
import { CnNet, NicTrack } from './state.js';
import { VmPusher, type PushCounters } from './vm-push.js';

/** What net-agent registers for: the real agent's resources, plus NIC model (RFD 28). */
export const CHANGEFEED_RESOURCES: ChangefeedResource[] = [
  { resource: 'network', subResources: [...NETWORK_SUBRESOURCES] },
  { resource: 'nic', subResources: ['create', 'delete', ...NIC_ANTI_SPOOF_FLAGS, 'model'] },
];

export const INSTANCE_FILE = 'net-agent.instance_uuid';

export class NetAgentPlugin implements CnAgentPlugin {
  readonly name = 'net-agent';
  readonly options: NetAgentOptions;
  readonly counters: NicCounters & PushCounters & { passes: number; changefeedItems: number } = {
    nicGets: 0,
    nicCreates: 0,
    nicUpdates: 0,
    nicDeletes: 0,
    nicClaims: 0,
    nicFailures: 0,
    nicsLeftAlone: 0,
    vmUpdates: 0,
    vmUpdateFailures: 0,
    nicsRemovedFromVms: 0,
    vmReboots: 0,
    nonConverging: 0,
    passes: 0,
    changefeedItems: 0,
  };
  private readonly ctx: AgentPluginContext;
  private readonly log: Logger;
  private readonly cns = new Map<string, CnNet>();
  /** Every tracked MAC of the fleet (a MAC belongs to one CN). */
  private readonly byMac = new Map<string, NicTrack>();
  /** network uuid → the tracks NAPI puts on it. */
  private readonly byNetwork = new Map<string, Set<NicTrack>>();
  private readonly napi: NapiCalls | undefined;
  private readonly reconciler: NicReconciler | undefined;
  private readonly pusher: VmPusher;
  private readonly networks: NetworkWatch | undefined;
  private changefeed: ChangefeedListener | undefined;
  private running = false;

  constructor(ctx: AgentPluginContext, options: Partial<NetAgentOptions> = {}) {
    this.ctx = ctx;
    this.options = resolveNetAgentOptions(options);
    this.log = ctx.log.child({ component: 'net-agent' });
    const o = this.options;
    const isRunning = (): boolean => this.running;
    this.pusher = new VmPusher({
      scheduler: ctx.scheduler,
      log: this.log,
      retryMinMs: o.retryMinMs,
      retryMaxMs: o.retryMaxMs,
      counters: this.counters,
      countError: (k) => ctx.countError(k),
      isRunning,
    });
    const url = ctx.urls.napi?.replace(/\/+$/, '');
    if (!url) return;
    const napi = (this.napi = new NapiCalls(ctx.http, url, o.requestTimeoutMs));
    this.reconciler = new NicReconciler({
      napi,
      scheduler: ctx.scheduler,
      log: this.log,
      adminUuid: o.adminUuid,
      retryMinMs: o.retryMinMs,
      retryMaxMs: o.retryMaxMs,
      counters: this.counters,
      countError: (k) => ctx.countError(k),
      userAgent: (t) => this.userAgent(t.owner.cn),
      isRunning,
      onRemoteChanged: (t, before) => this.onRemoteChanged(t, before),
      onFinished: (t) => this.dropTrack(t),
      onLost: (t) => {
        if (t.vmUuid) this.pusher.mark(t.owner, t.vmUuid);
      },
    });
    this.networks = new NetworkWatch({
      napi,
      scheduler: ctx.scheduler,
      log: this.log,
      pollMs: o.networkPollMs,
      userAgent: () => this.sharedUserAgent(),
      onChanged: (uuid) => this.refreshNetwork(uuid),
    });
  }

  async start(): Promise<void> {
    this.running = true;
    if (!this.napi) {
      this.log.warn('no NAPI configured: net-agent keeps no NIC in sync');
      return;
    }
    this.networks!.start();
    if (this.options.changefeed) {
      const instance = this.options.instanceUuid ?? (await this.instanceUuid());
      this.changefeed = new ChangefeedListener({
        url: this.napi.baseUrl,
        instance,
        service: 'net-agent',
        resources: CHANGEFEED_RESOURCES,
        http: this.ctx.http,
        scheduler: this.ctx.scheduler,
        log: this.log,
        userAgent: this.sharedUserAgent(),
        onItem: (item) => this.onChangefeedItem(item),
        onBootstrap: (resource) => this.onBootstrap(resource),
        heartbeatMs: this.options.changefeedHeartbeatMs,
        backoffMinMs: this.options.changefeedBackoffMinMs,
        backoffMaxMs: this.options.changefeedBackoffMaxMs,
        probeRetryMs: this.options.changefeedProbeRetryMs,
      });
      this.changefeed.start();
    }
    for (const cn of this.cns.values()) this.schedulePass(cn, this.spread());
  }

  stop(): void {
    this.running = false;
    this.changefeed?.stop();
    this.changefeed = undefined;
    this.networks?.stop();
    for (const cn of this.cns.values()) this.quiesce(cn);
  }

  attach(mockCn: MockCn): void {
    if (!this.napi || this.cns.has(mockCn.uuid)) return;
    const cn = new CnNet(mockCn);
    try {
      cn.subscription = mockCn.vms.subscribe((ev) => this.onVmEvent(cn, ev));
    } catch (err) {
      this.ctx.countError('net-agent.subscribe');
      this.log.error({ ...failureFields(err), server: mockCn.uuid }, 'cannot watch the VMs of this CN; net-agent skips it');
      return;
    }
    this.cns.set(mockCn.uuid, cn);
    if (this.running) this.schedulePass(cn, this.spread());
  }

  /**
   * Stop serving a CN. Its NAPI records stay: removing a server releases them (ServerFactory),
   * once this resolves: when no request of the CN is in flight any more (a NIC POSTed after the
   * clean-up read NAPI would outlive the CN).
   */
  async detach(uuid: string): Promise<void> {
    const cn = this.cns.get(uuid);
    if (!cn) return;
    this.cns.delete(uuid);
    cn.detached = true;
    cn.subscription?.unsubscribe();
    cn.subscription = undefined;
    this.quiesce(cn);
    for (const t of [...cn.nics.values()]) this.dropTrack(t);
    cn.vmMacs.clear();
    cn.serverMacs.clear();
    await Promise.allSettled([...cn.inFlight]);
  }

  stats(): Record<string, number> {
    let nics = 0;
    let retrying = 0;
    for (const cn of this.cns.values()) {
      nics += cn.nics.size;
      for (const t of cn.nics.values()) if (t.retryJob && t.attempt > 0) retrying++;
    }
    return {
      ...this.counters,
      servers: this.cns.size,
      nics,
      retrying,
      networks: this.networks?.size ?? 0,
      changefeedLive: this.changefeed?.live ? 1 : 0,
      changefeedConnects: this.changefeed?.stats.connects ?? 0,
    };
  }

  /** The changefeed connection's state ('live', 'unsupported', ...), for tests and status. */
  get changefeedState(): string {
    return this.changefeed?.state ?? 'stopped';
  }

  // ---- passes -------------------------------------------------------------------------

  private spread(): number {
    return this.options.startSpreadMs > 0 ? Math.random() * this.options.startSpreadMs : 0;
  }

  private schedulePass(cn: CnNet, delayMs: number): void {
    this.ctx.scheduler.cancel(cn.passJob);
    cn.passJob = this.ctx.scheduler.schedule(delayMs, () => {
      cn.passJob = undefined;
      this.fullPass(cn);
    });
  }

  /** Everything of one CN from scratch: its NICs from sysinfo and VMs, each re-read from NAPI. */
  private fullPass(cn: CnNet): void {
    if (cn.detached || !this.running) return;
    this.counters.passes++;
    cn.started = true;
    try {
      this.setServerNics(cn);
      const seen = new Set<string>();
      for (const vm of cn.cn.vms.list({ include_dni: true })) {
        seen.add(vm.uuid);
        if (vm.do_not_inventory) this.forgetVm(cn, vm.uuid);
        else this.setVmNics(cn, vm);
      }
      for (const vmUuid of [...cn.vmMacs.keys()]) if (!seen.has(vmUuid)) this.releaseVm(cn, vmUuid);
      for (const t of cn.nics.values()) {
        t.stale = true;
        this.reconciler!.kick(t);
      }
      for (const vmUuid of cn.vmMacs.keys()) this.pusher.mark(cn, vmUuid);
    } catch (err) {
      this.ctx.countError('net-agent.pass');
      logFailure(this.log, err, { server: cn.cn.uuid }, 'net-agent pass failed');
    }
    this.schedulePass(cn, Scheduler.jitter(this.options.fullPassIntervalMs));
  }

  private quiesce(cn: CnNet): void {
    this.ctx.scheduler.cancel(cn.passJob);
    cn.passJob = undefined;
    for (const t of cn.nics.values()) this.reconciler?.cancel(t);
    for (const vmUuid of [...cn.vmPush.keys()]) {
      const push = cn.vmPush.get(vmUuid)!;
      this.ctx.scheduler.cancel(push.retryJob);
      push.retryJob = undefined;
    }
  }

  // ---- desired state --------------------------------------------------------------------

  private setServerNics(cn: CnNet): void {
    const wanted = serverLocalNics(cn.cn.sysinfo, cn.cn.uuid, this.options.adminUuid);
    for (const mac of [...cn.serverMacs]) if (!wanted.has(mac)) this.release(cn, mac, cn.cn.uuid);
    for (const [mac, local] of wanted) {
      if (this.setLocal(cn, mac, local, undefined)) cn.serverMacs.add(mac);
    }
  }

  private setVmNics(cn: CnNet, vm: Vm): void {
    const wanted = vmLocalNics(vm, cn.cn.uuid, this.options.adminUuid);
    const had = cn.vmMacs.get(vm.uuid);
    if (had) for (const mac of [...had]) if (!wanted.has(mac)) this.release(cn, mac, vm.uuid);
    const macs = cn.vmMacs.get(vm.uuid) ?? new Set<string>();
    for (const [mac, local] of wanted) if (this.setLocal(cn, mac, local, vm.uuid)) macs.add(mac);
    if (macs.size > 0) cn.vmMacs.set(vm.uuid, macs);
    else cn.vmMacs.delete(vm.uuid);
  }

  /** The VM is gone: release its NICs in NAPI. */
  private releaseVm(cn: CnNet, vmUuid: string): void {
    for (const mac of [...(cn.vmMacs.get(vmUuid) ?? [])]) this.release(cn, mac, vmUuid);
    cn.vmMacs.delete(vmUuid);
    this.pusher.forget(cn, vmUuid);
  }

  /** The VM became do_not_inventory (e.g. a migration): stop tracking it, release nothing. */
  private forgetVm(cn: CnNet, vmUuid: string): void {
    for (const mac of cn.vmMacs.get(vmUuid) ?? []) {
      const t = cn.nics.get(mac);
      if (t && t.vmUuid === vmUuid) {
        this.reconciler?.cancel(t);
        this.dropTrack(t);
      }
    }
    cn.vmMacs.delete(vmUuid);
    this.pusher.forget(cn, vmUuid);
  }

  /** Returns false when the MAC is another CN's. */
  private setLocal(cn: CnNet, mac: string, local: LocalNic, vmUuid: string | undefined): boolean {
    let t = cn.nics.get(mac);
    if (!t) {
      const other = this.byMac.get(mac);
      if (other && other.owner !== cn) {
        if (!other.warnedForeign) this.log.warn({ mac, server: cn.cn.uuid, other: other.owner.cn.uuid }, 'the same MAC on two mock CNs; ignoring the second');
        other.warnedForeign = true;
        return false;
      }
      t = new NicTrack(mac, cn);
      cn.nics.set(mac, t);
      this.byMac.set(mac, t);
    }
    if (t.local && sameLocal(t.local, local) && t.vmUuid === vmUuid) return true;
    // A NIC moving between VMs of this CN leaves the old VM's MAC set.
    if (t.vmUuid && t.vmUuid !== vmUuid) cn.vmMacs.get(t.vmUuid)?.delete(mac);
    if (t.local?.kind === 'server' && local.kind !== 'server') cn.serverMacs.delete(mac);
    t.local = local;
    t.vmUuid = vmUuid;
    t.releaseOwner = undefined;
    t.releaseType = undefined;
    this.reconciler!.kick(t);
    return true;
  }

  private release(cn: CnNet, mac: string, owner: string): void {
    const t = cn.nics.get(mac);
    if (owner === cn.cn.uuid) cn.serverMacs.delete(mac);
    else cn.vmMacs.get(owner)?.delete(mac);
    if (!t || (t.local === undefined && t.releaseOwner === owner)) return;
    t.local = undefined;
    t.lost = false;
    t.releaseOwner = owner;
    t.releaseType = owner === cn.cn.uuid ? 'server' : 'zone';
    this.reconciler!.kick(t);
  }

  private dropTrack(t: NicTrack): void {
    t.finished = true;
    const cn = t.owner;
    if (cn.nics.get(t.mac) === t) cn.nics.delete(t.mac);
    if (this.byMac.get(t.mac) === t) this.byMac.delete(t.mac);
    this.indexNetwork(t, t.remote, null);
  }

  // ---- reacting -----------------------------------------------------------------------

  private onVmEvent(cn: CnNet, ev: VmEvent): void {
    if (!cn.started || cn.detached || !this.running) return;
    try {
      if (ev.type === 'delete') {
        this.releaseVm(cn, ev.uuid);
        return;
      }
      const vm = ev.vm;
      if (!vm || typeof vm !== 'object') return;
      if (vm.do_not_inventory) {
        this.forgetVm(cn, ev.uuid);
        return;
      }
      if (ev.type === 'modify' && Array.isArray(ev.changes) && ev.changes.length > 0) {
        if (!ev.changes.some((c) => RELEVANT_VM_PATHS.has(String(c.path?.[0])))) return;
      }
      this.setVmNics(cn, vm);
      this.pusher.mark(cn, vm.uuid);
    } catch (err) {
      this.ctx.countError('net-agent.event');
      logFailure(this.log, err, { server: cn.cn.uuid, vm: ev.uuid }, 'net-agent failed to handle a VM event');
    }
  }

  private onRemoteChanged(t: NicTrack, before: NapiNic | null | undefined): void {
    this.indexNetwork(t, before, t.remote);
    if (t.vmUuid && t.local?.kind === 'zone') this.pusher.mark(t.owner, t.vmUuid);
  }

  private indexNetwork(t: NicTrack, before: NapiNic | null | undefined, after: NapiNic | null | undefined): void {
    const was = typeof before?.network_uuid === 'string' ? before.network_uuid : undefined;
    const now = !t.finished && typeof after?.network_uuid === 'string' ? after.network_uuid : undefined;
    if (was === now) return;
    if (was) {
      const set = this.byNetwork.get(was);
      if (set?.delete(t)) {
        this.networks?.remove(was);
        if (set.size === 0) this.byNetwork.delete(was);
      }
    }
    if (now) {
      let set = this.byNetwork.get(now);
      if (!set) this.byNetwork.set(now, (set = new Set()));
      if (!set.has(t)) {
        set.add(t);
        this.networks?.add(now);
      }
    }
  }

  private refreshNetwork(networkUuid: string): void {
    for (const t of this.byNetwork.get(networkUuid) ?? []) {
      t.stale = true;
      this.reconciler!.kick(t);
    }
  }

  private onChangefeedItem(item: ChangefeedItem): void {
    this.counters.changefeedItems++;
    const { resource, subResources } = item.changeKind;
    if (resource === 'nic') {
      const mac = normaliseMac(item.changedResourceId);
      const t = mac ? this.byMac.get(mac) : undefined;
      if (!t) return;
      if (subResources.includes('delete')) t.deletedInNapi = true;
      // The item of a change this agent made itself names the etag NAPI answered it with:
      // nothing new to read then.
      else if (typeof item.etag === 'string' && item.etag === t.etag && t.remote) return;
      t.stale = true;
      this.reconciler!.kick(t);
    } else if (resource === 'network') {
      this.refreshNetwork(item.changedResourceId);
      this.networks!.pollNow(item.changedResourceId);
    }
  }

  /** After a (re)connect items may have been missed: re-read everything, spread out. */
  private onBootstrap(resource: string): void {
    if (resource !== 'nic') return;
    for (const cn of this.cns.values()) {
      if (!cn.started) continue;
      this.ctx.scheduler.schedule(this.spread(), () => {
        if (cn.detached) return;
        for (const t of cn.nics.values()) {
          t.stale = true;
          this.reconciler!.kick(t);
        }
      });
    }
  }

  // ---- identity -------------------------------------------------------------------------

  private userAgent(cn: MockCn): string {
    const version = cn.agents?.find((a) => a.name === 'net-agent')?.version ?? this.options.defaultVersion;
    return netAgentUserAgent(version, cn.uuid);
  }

  /** For requests made once for the whole fleet (network polls, the changefeed). */
  private sharedUserAgent(): string {
    return netAgentUserAgent(this.options.defaultVersion);
  }

  /** The changefeed identity, stable across restarts (the real agent's is per-CN instance_uuid). */
  private async instanceUuid(): Promise<string> {
    const file = path.join(this.ctx.dataDir, INSTANCE_FILE);
    try {
      const text = (await fsp.readFile(file, 'utf8')).trim();
      if (isUuid(text)) return text.toLowerCase();
    } catch {
      // absent or unreadable: make one
    }
    const fresh = newUuid();
    try {
      await writeFileDurable(file, `${fresh}\n`);
    } catch (err) {
      this.log.warn({ err, file }, 'cannot persist the changefeed instance uuid; using a fresh one');
    }
    return fresh;
  }
}

/** The plug-in factory the daemon calls once its shared resources exist. */
export function createNetAgentPlugin(options: Partial<NetAgentOptions> = {}): (ctx: AgentPluginContext) => NetAgentPlugin {
  return (ctx) => new NetAgentPlugin(ctx, options);
}
