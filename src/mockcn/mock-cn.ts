/**
 * The MockCn implementation: one small object per CN holding its data. Everything that ticks or
 * talks (status reports, sysinfo registration, the agents POST) is done by the shared services
 * behind `MockCnHooks`; a CN only tells them what changed.
 */
import type { Sysinfo } from '../common/sysinfo.js';
import type { VmStore } from '../vmadm/types.js';
import { readAgents } from './agents-dir.js';
import { DAEMON_SYSINFO_KEY, readSysinfoFile } from './sysinfo-file.js';
import { sdcAgentsOf } from './sysinfo-keys.js';
import type { AgentAddress, AgentRecord, AgentsPostLog, BootCause, CnConditions, CnPower, MockCn, PowerChange, PowerOnOptions, ServerPaths } from './types.js';

/** The shared services a CN reports changes to (the CNAPI reporter, in the daemon). */
export interface MockCnHooks {
  statusDirty(cn: MockCn): void;
  sysinfoChanged(cn: MockCn): void;
  postAgents(cn: MockCn, agents: readonly AgentRecord[]): Promise<void>;
  /** The CN went down or came up (`cn.power` is already the new state). */
  powerChanged?(cn: MockCn, change: PowerChange): Promise<void>;
  /** Boot the CN from off (MockCn.powerOn); absent: no firmware. */
  powerOn?(cn: MockCn, cause: BootCause, opts?: PowerOnOptions): Promise<void>;
}

/** Hooks that do nothing: for a CN that is not (yet) attached to the daemon's services. */
export const DETACHED_HOOKS: MockCnHooks = {
  statusDirty: () => undefined,
  sysinfoChanged: () => undefined,
  postAgents: async () => undefined,
};

export interface MockCnInit {
  uuid: string;
  paths: ServerPaths;
  vms: VmStore;
  sysinfo: Sysinfo;
  agents?: readonly AgentRecord[];
  hooks?: MockCnHooks;
  /** The hardware profile it was made with (profile-record.ts); absent = 'virtual'. */
  profile?: string;
}

export class MockCnImpl implements MockCn {
  readonly uuid: string;
  readonly paths: ServerPaths;
  readonly vms: VmStore;
  readonly profile: string;
  sysinfo: Sysinfo;
  registered = false;
  draining = false;
  power: CnPower = 'up';
  agents: readonly AgentRecord[];
  hooks: MockCnHooks;
  conditions?: CnConditions;
  private address: AgentAddress | undefined;
  private host: string | undefined;

  constructor(init: MockCnInit) {
    this.uuid = init.uuid;
    this.paths = init.paths;
    this.vms = init.vms;
    this.sysinfo = init.sysinfo;
    this.profile = init.profile ?? 'virtual';
    this.agents = init.agents ?? [];
    this.hooks = init.hooks ?? DETACHED_HOOKS;
    if (init.agents) applySdcAgents(this.sysinfo, this.agents);
  }

  get agentAddress(): AgentAddress | undefined {
    return this.address;
  }

  /** Setting the address also sets sysinfo's `CN Agent IP` / `CN Agent Port` (what CNAPI gets). */
  set agentAddress(address: AgentAddress | undefined) {
    this.address = address;
    applyAgentAddress(this.sysinfo, address, this.host);
  }

  get hostedBy(): string | undefined {
    return this.host;
  }

  /** The hosting daemon, sysinfo's `Mockcloud Daemon` (set before the address: it follows it). */
  set hostedBy(daemon: string | undefined) {
    this.host = daemon;
    applyAgentAddress(this.sysinfo, this.address, daemon);
  }

  get hostname(): string {
    return typeof this.sysinfo.Hostname === 'string' ? this.sysinfo.Hostname : '';
  }

  markStatusDirty(): void {
    this.hooks.statusDirty(this);
  }

  async reloadSysinfo(): Promise<void> {
    const fresh = await readSysinfoFile(this.paths.sysinfo, this.uuid);
    applySdcAgents(fresh, this.agents);
    applyAgentAddress(fresh, this.address, this.host);
    this.sysinfo = fresh;
    this.hooks.sysinfoChanged(this);
  }

  async refreshAgents(log?: AgentsPostLog): Promise<{ agents: AgentRecord[]; postError?: Error }> {
    const agents = await readAgents(this.paths.agents, this.uuid);
    this.agents = agents;
    // The real agent_install / agents_uninstall refresh sysinfo too: "SDC Agents" follows.
    if (applySdcAgents(this.sysinfo, agents)) this.hooks.sysinfoChanged(this);
    try {
      await this.hooks.postAgents(this, agents);
    } catch (err) {
      const postError = err instanceof Error ? err : new Error(String(err));
      log?.warn({ error: postError.message }, 'posting agents to cnapi');
      return { agents, postError };
    }
    return { agents };
  }

  async setPower(power: CnPower, change: PowerChange = { graceful: true }): Promise<void> {
    if (power === this.power) return;
    this.power = power;
    if (power === 'down') this.registered = false;
    await this.hooks.powerChanged?.(this, change);
  }

  powerOn(cause: BootCause, opts?: PowerOnOptions): Promise<void> | undefined {
    return this.hooks.powerOn?.(this, cause, opts);
  }

  /** The version of an installed agent, e.g. for a User-Agent header. */
  agentVersion(name: string): string | undefined {
    return this.agents.find((a) => a.name === name)?.version;
  }
}

/** Set "SDC Agents" from the CN's agents, in place (the key keeps its position); true if it changed. */
function applySdcAgents(sysinfo: Sysinfo, agents: readonly AgentRecord[]): boolean {
  const next = sdcAgentsOf(agents);
  if (JSON.stringify(sysinfo['SDC Agents']) === JSON.stringify(next)) return false;
  sysinfo['SDC Agents'] = next;
  return true;
}

function applyAgentAddress(sysinfo: Sysinfo, address: AgentAddress | undefined, host: string | undefined): void {
  // In this order, after every key of the file, so every CN's sysinfo has one shape.
  delete sysinfo[DAEMON_SYSINFO_KEY];
  if (address) {
    sysinfo['CN Agent IP'] = address.ip;
    sysinfo['CN Agent Port'] = address.port;
  } else {
    delete sysinfo['CN Agent IP'];
    delete sysinfo['CN Agent Port'];
  }
  if (host) sysinfo[DAEMON_SYSINFO_KEY] = host;
}
