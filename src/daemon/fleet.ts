/**
 * The mock CNs this daemon hosts. Loading the data dir at start (bounded concurrency; a broken
 * server dir is logged, counted and skipped, never fatal), adding and removing CNs at run
 * time, and attaching each CN to the shared services in the right order: its cn-agent socket
 * first (sysinfo must carry the real "CN Agent Port"), then the CNAPI reporter, then the
 * agent plug-ins.
 */
import { failureFields, type Logger } from '../common/log.js';
import { MockcloudError, toMockcloudError } from '../common/errors.js';
import type { CnapiReporter } from '../agents/cn-agent/cnapi-reporter/index.js';
import { loadServer, type VmStoreOpener } from '../mockcn/load-server.js';
import { finishInterruptedReboot, isMarkedOff } from '../mockcn/power-cycle.js';
import type { MockCnHooks, MockCnImpl } from '../mockcn/mock-cn.js';
import type { BootCause, MockCn, PowerChange, PowerOnOptions } from '../mockcn/types.js';
import { scanServers } from '../mockcn/server-dir.js';
import { isHeadnodeSysinfo } from '../mockcn/sysinfo-template.js';
import { adminNicOf } from '../mockcn/sysinfo-file.js';
import type { CnAgentPlugin, FleetView } from '../runtime/agent-plugin.js';
import { mapLimit } from './concurrency.js';
import type { CnAgentHost, VmadmHost } from './services.js';

export interface FleetOptions {
  dataDir: string;
  log: Logger;
  vmadm: VmadmHost;
  cnAgent: CnAgentHost;
  reporter: CnapiReporter;
  plugins: readonly CnAgentPlugin[];
  loadConcurrency?: number;
  countError: (kind: string) => void;
  /** The set of CNs or an address changed (daemon.json). */
  onChange: () => void;
  /** Cleans up an interrupted creation (`.creating-<uuid>`); see ServerFactory. */
  recoverCreation?: (uuid: string) => Promise<void>;
  /**
   * The IP this CN's cn-agent socket binds (its `CN Agent IP`): per-CN loopback addresses
   * (agent-ips.ts). Absent, or resolving undefined: the cn-agent server's bind IP.
   */
  agentIpFor?: (uuid: string) => Promise<string | undefined>;
  /** sysinfo `Mockcloud Daemon` of every CN: "<daemon id>@<host>". */
  hostedBy?: string;
  /** The CNs' firmware (src/boot BootService): how a CN that is off boots; absent: none. */
  boot?: {
    powerOn(cn: MockCn, cause: BootCause, opts?: PowerOnOptions): Promise<void>;
    forget(uuid: string): void;
  };
}

export interface LoadReport {
  loaded: number;
  failed: { uuid: string; error: string }[];
  recovered: number;
  /** Removals begun by an earlier run and not finished. */
  deleting: string[];
}

export class Fleet implements FleetView {
  private readonly cns = new Map<string, MockCnImpl>();
  /** uuids being added or removed right now: a second add/remove of the same CN is refused. */
  private readonly busy = new Set<string>();
  private readonly opts: FleetOptions;
  private readonly openVms: VmStoreOpener;
  /** What every CN tells the shared services: the CNAPI reporter, and its power to cn-agent too. */
  private readonly hooks: MockCnHooks;
  /**
   * CNs that came in off (a first boot, a boot at start): their agents (vm-agent, net-agent,
   * ...) start when the OS has come up, as on a real CN; until then nothing of theirs runs (a
   * net-agent would register the admin NIC booter is about to make).
   */
  private readonly agentsAtBoot = new Set<string>();

  constructor(opts: FleetOptions) {
    this.opts = opts;
    this.openVms = (uuid, identity) => opts.vmadm.openServer(uuid, identity);
    const { reporter } = opts;
    this.hooks = {
      statusDirty: (cn) => reporter.statusDirty(cn),
      sysinfoChanged: (cn) => reporter.sysinfoChanged(cn),
      postAgents: (cn, agents) => reporter.postAgents(cn, agents),
      powerChanged: (cn, change) => this.powerChanged(cn, change),
      ...(opts.boot ? { powerOn: opts.boot.powerOn.bind(opts.boot) } : {}),
    };
  }

  /**
   * Down: cn-agent stops listening first (no task starts while the CN shuts down), then the
   * reporter sends its last word and stops. Up: cn-agent listens (404 until registered, as a
   * real agent that has not registered yet), then the reporter registers the CN.
   */
  private async powerChanged(cn: MockCn, change: PowerChange): Promise<void> {
    if (!this.cns.has(cn.uuid)) return;
    const port = cn.agentAddress?.port;
    await this.opts.cnAgent.setPower?.(cn.uuid, cn.power);
    // Up on another port (its own was taken meanwhile): daemon.json says where it listens now.
    if (cn.agentAddress?.port !== port) this.opts.onChange();
    await this.opts.reporter.powerChanged(cn, change);
    if (cn.power === 'up' && this.agentsAtBoot.delete(cn.uuid)) this.attachPlugins(cn as MockCnImpl);
    else {
      for (const plugin of this.opts.plugins) {
        try {
          plugin.powerChanged?.(cn);
        } catch (err) {
          this.opts.log.error({ err, server: cn.uuid, plugin: plugin.name }, 'agent plug-in failed to follow a power change');
        }
      }
    }
    this.opts.log.info({ server: cn.uuid, power: cn.power }, cn.power === 'down' ? 'server down' : 'server up');
  }

  get size(): number {
    return this.cns.size;
  }

  get(uuid: string): MockCnImpl | undefined {
    return this.cns.get(uuid.toLowerCase()) ?? this.cns.get(uuid);
  }

  list(): MockCnImpl[] {
    return [...this.cns.values()];
  }

  /** The dev DC's headnode server, when this fleet hosts one. */
  headnode(): MockCnImpl | undefined {
    for (const cn of this.cns.values()) if (isHeadnodeSysinfo(cn.sysinfo)) return cn;
    return undefined;
  }

  /** How many compute nodes (every CN but the headnode server) the fleet hosts. */
  get computeNodeCount(): number {
    return this.cns.size - (this.headnode() ? 1 : 0);
  }

  has(uuid: string): boolean {
    return this.cns.has(uuid) || this.busy.has(uuid);
  }

  /** Load every server dir of the data dir. */
  async loadAll(): Promise<LoadReport> {
    const { log, dataDir } = this.opts;
    const scan = await scanServers(dataDir);
    const report: LoadReport = { loaded: 0, failed: [], recovered: 0, deleting: [] };
    // Removals begun and not finished (`.deleting-<uuid>`) are not CNs any more; their clean-up
    // in Triton is the daemon's to finish (ServerFactory.resumeRemovals).
    report.deleting = scan.deleting;
    for (const uuid of scan.creating) {
      if (!this.opts.recoverCreation) continue;
      try {
        await this.opts.recoverCreation(uuid);
        report.recovered++;
      } catch (err) {
        log.warn({ err, server: uuid }, 'cannot clean up an interrupted server creation; will retry at next start');
      }
    }
    if (scan.other.length > 0) log.warn({ entries: scan.other }, 'ignoring entries of servers/ that are not server dirs');
    await mapLimit(scan.servers, this.opts.loadConcurrency ?? 32, async (uuid) => {
      try {
        await this.load(uuid);
        report.loaded++;
      } catch (err) {
        const e = toMockcloudError(err);
        this.opts.countError('fleet.load');
        log.error({ server: uuid, ...failureFields(e) }, `skipping server ${uuid}: ${e.message}`);
        report.failed.push({ uuid, error: e.message });
      }
    });
    log.info({ loaded: report.loaded, failed: report.failed.length, recovered: report.recovered, deleting: report.deleting.length }, 'fleet loaded');
    return report;
  }

  /**
   * Load one server dir (already complete on disk) and start it; `fresh`: just created. `off`:
   * it comes in off (its first boot is the caller's). A CN that was off or booting when the
   * last daemon stopped (its marker, power-cycle.ts) boots now, through its firmware if it has
   * one.
   */
  async load(uuid: string, opts: { fresh?: boolean; off?: boolean } = {}): Promise<MockCnImpl> {
    const cn = await loadServer(this.opts.dataDir, uuid, this.openVms);
    const boot = this.opts.boot;
    // Off when it stopped: marked so, or never booted (no admin address yet: a creation the
    // last daemon left between writing the CN and marking it off).
    const wasOff = !opts.fresh && boot !== undefined && (!adminNicOf(cn.sysinfo).ip || (await isMarkedOff(cn)));
    if (opts.off || wasOff) cn.power = 'down';
    await this.add(cn);
    if (wasOff) {
      void cn.powerOn('daemon-start')?.catch((err: unknown) => this.opts.log.warn({ err, server: uuid }, 'booting a server that was off failed'));
    } else if (!opts.fresh) {
      // A reboot the previous daemon acknowledged but did not see through boots now.
      void finishInterruptedReboot(cn, this.opts.log).catch((err: unknown) =>
        this.opts.log.warn({ err, server: uuid }, 'cannot finish an interrupted reboot'),
      );
    }
    return cn;
  }

  /** Start serving a loaded CN: socket, CNAPI reporting, agent plug-ins. */
  async add(cn: MockCnImpl): Promise<void> {
    if (this.has(cn.uuid)) throw new MockcloudError('Conflict', `server ${cn.uuid} is already in the fleet`);
    this.busy.add(cn.uuid);
    try {
      try {
        const ip = await this.opts.agentIpFor?.(cn.uuid);
        if (this.opts.hostedBy) cn.hostedBy = this.opts.hostedBy;
        cn.agentAddress = await this.opts.cnAgent.attach(cn, ip ? { ip } : {});
        // A CN that comes in off does not listen until it has booted.
        if (cn.power === 'down') await this.opts.cnAgent.setPower?.(cn.uuid, 'down');
      } catch (err) {
        await this.closeVms(cn.uuid);
        throw err;
      }
      cn.hooks = this.hooks;
      this.cns.set(cn.uuid, cn);
      this.opts.reporter.attach(cn);
      if (cn.power === 'down') this.agentsAtBoot.add(cn.uuid);
      else this.attachPlugins(cn);
    } finally {
      this.busy.delete(cn.uuid);
    }
    this.opts.onChange();
  }

  private attachPlugins(cn: MockCnImpl): void {
    for (const plugin of this.opts.plugins) {
      try {
        plugin.attach(cn);
      } catch (err) {
        this.opts.countError(`${plugin.name}.attach`);
        this.opts.log.error({ err, server: cn.uuid, plugin: plugin.name }, 'agent plug-in failed to attach');
      }
    }
  }

  /** Stop serving a CN (its files stay; see ServerFactory.remove for deleting them). */
  async remove(uuid: string): Promise<MockCnImpl | undefined> {
    const cn = this.cns.get(uuid);
    if (!cn || this.busy.has(uuid)) return undefined;
    this.busy.add(uuid);
    try {
      this.cns.delete(uuid);
      const agentsRan = !this.agentsAtBoot.delete(uuid);
      // Every agent stops at once; then what they were sending for the CN is waited for.
      const settling: Promise<void>[] = [];
      for (const plugin of agentsRan ? this.opts.plugins : []) {
        try {
          const detached = plugin.detach(uuid);
          if (detached) {
            settling.push(detached.catch((err: unknown) => this.opts.log.error({ err, server: uuid, plugin: plugin.name }, 'agent plug-in failed to detach')));
          }
        } catch (err) {
          this.opts.log.error({ err, server: uuid, plugin: plugin.name }, 'agent plug-in failed to detach');
        }
      }
      settling.push(this.opts.reporter.detach(uuid));
      this.opts.boot?.forget(uuid);
      await this.opts.cnAgent.detach(uuid);
      await Promise.all(settling);
      await this.closeVms(uuid);
      cn.registered = false;
    } finally {
      this.busy.delete(uuid);
    }
    this.opts.onChange();
    return cn;
  }

  /** Detach every CN (shutdown). */
  async removeAll(): Promise<void> {
    await mapLimit([...this.cns.keys()], 64, (uuid) => this.remove(uuid));
  }

  private async closeVms(uuid: string): Promise<void> {
    try {
      await this.opts.vmadm.closeServer?.(uuid);
    } catch (err) {
      this.opts.log.warn({ err, server: uuid }, 'closing the VM store failed');
    }
  }
}
