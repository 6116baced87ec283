/**
 * The seam through which the daemon hosts per-CN agents other than cn-agent's task server
 * (vm-agent, net-agent, cmon-agent; src/agents/*). A plug-in is ONE object for the whole
 * fleet: it keeps a small per-CN record in `attach` and does all periodic work through the
 * shared scheduler and all outbound HTTP through the shared client, never a timer, socket
 * or HTTP agent per CN.
 *
 * Lifecycle, as the daemon drives it:
 *   start()            once, before any attach (bind shared listeners here);
 *   attach(cn)         for every CN loaded at start and every CN created later;
 *   detach(uuid)       when a CN is removed; resolves once none of the CN's requests is in
 *                      flight any more (the removal's clean-up in Triton starts after it, so
 *                      nothing the CN's agents were sending lands after the sweep);
 *   stop()             once, at shutdown; release every timer and socket.
 */
import type { JsonHttpClient } from '../common/http-client.js';
import type { Logger } from '../common/log.js';
import type { MockCn } from '../mockcn/types.js';
import type { Scheduler } from './scheduler.js';

/** The Triton API addresses a plug-in talks to (absolute base URLs, no trailing slash). */
export interface ServiceUrls {
  cnapi?: string;
  vmapi?: string;
  napi?: string;
  imgapi?: string;
  /** SAPI: where each CN's agent instances are adopted (RFD 82) and config-agent polls. */
  sapi?: string;
  /** PAPI: the embedded dev headnode's; no agent uses it (`mirror load` puts packages there). */
  papi?: string;
  /** FWAPI: firewaller's rules (`POST /resolve`) and, on `fwapiFast`, its update stream. */
  fwapi?: string;
  /** FWAPI's update stream (node-fast), `tcp://host:port`; default: FWAPI's host, port 2020. */
  fwapiFast?: string;
}

/** What a plug-in may read of the fleet: the CNs currently hosted by the daemon. */
export interface FleetView {
  get(uuid: string): MockCn | undefined;
  list(): MockCn[];
  readonly size: number;
}

/** Everything a plug-in gets from the daemon: shared resources only. */
export interface AgentPluginContext {
  log: Logger;
  scheduler: Scheduler;
  http: JsonHttpClient;
  urls: ServiceUrls;
  fleet: FleetView;
  /** The IP the daemon binds agent listeners to (e.g. 127.0.0.1 in tests, 0.0.0.0 on a host). */
  bindIp: string;
  /** `<data-dir>`, for plug-ins that persist state beside the server dirs. */
  dataDir: string;
  /** Count an error by kind for `mockcloud status` (e.g. 'vm-agent.vmapi'). */
  countError(kind: string): void;
}

export interface CnAgentPlugin {
  /** Short, unique: 'vm-agent', 'net-agent', 'cmon-agent'. */
  readonly name: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
  /** Begin serving this CN. Must not throw for one bad CN; log and count instead. */
  attach(cn: MockCn): void;
  /**
   * Stop serving this CN and drop its per-CN state. Unknown uuids are ignored. A promise, if
   * returned, resolves when the CN's requests in flight have ended (bounded by their timeouts).
   */
  detach(uuid: string): void | Promise<void>;
  /**
   * Optional: the CN went down or came up (a reboot); its agents stopped, or start again as
   * they do at a CN's boot. Must not throw.
   */
  powerChanged?(cn: MockCn): void;
  /** Optional counters merged into the control API's status output under `agents.<name>`. */
  stats?(): Record<string, number>;
  /**
   * Optional fields of one CN for its row in `GET /servers` (list-servers, the fleet page):
   * small and cheap, read for every CN of a listing.
   */
  describe?(uuid: string): Record<string, unknown> | undefined;
}

/** A plug-in is built from the context once the daemon's shared resources exist. */
export type CnAgentPluginFactory = (ctx: AgentPluginContext) => CnAgentPlugin;
