/**
 * The embedded dev headnode as the daemon runs it: started (src/headnode: CNAPI, VMAPI, NAPI,
 * IMGAPI, SAPI, FWAPI subsets) only when asked for and no Triton address is configured, its
 * addresses then filled into the daemon's config so every CN points at it; and the dev DC's
 * headnode server, made among the fleet when the data dir has none. The daemon (daemon.ts)
 * calls these in its start and stops the headnode in its stop.
 */
import { failureFields, type Logger } from '../common/log.js';
import { Headnode, type HeadnodePorts } from '../headnode/index.js';
import type { Pacing } from '../timing/wait.js';
import type { DaemonConfig } from './config.js';
import type { Fleet } from './fleet.js';
import type { ServerFactory } from './server-factory.js';

/** How the daemon is asked to run the embedded headnode (DaemonOptions.embeddedHeadnode). */
export interface EmbeddedHeadnodeWish {
  ports?: HeadnodePorts;
  host?: string;
  heartbeat?: { periodMs?: number; lifetimeMs?: number };
}

/**
 * Starts the dev headnode when asked to and no Triton address is configured, and points
 * `config.urls` at it; undefined when it is not run. The dev DC's workflows and waitlist take
 * `pacing`: the daemon's timing, on its scheduler.
 */
export async function startEmbeddedHeadnode(
  want: EmbeddedHeadnodeWish | undefined,
  config: DaemonConfig,
  log: Logger,
  pacing: Pacing,
): Promise<Headnode | undefined> {
  if (!want) return undefined;
  const configured = Object.keys(config.urls).filter((k) => config.urls[k as keyof typeof config.urls]);
  if (configured.length > 0) {
    log.info({ urls: config.urls }, 'Triton addresses configured: no embedded headnode');
    return undefined;
  }
  const headnode = new Headnode({
    dataDir: config.dataDir,
    log,
    host: want.host ?? '127.0.0.1',
    ...(want.ports ? { ports: want.ports } : config.headnodePorts ? { ports: config.headnodePorts } : {}),
    datacenter: config.datacenterName,
    ...(config.dnsDomain ? { dnsDomain: config.dnsDomain } : {}),
    adminUuid: config.adminUuid,
    platform: config.platform,
    ...(want.heartbeat ? { heartbeat: want.heartbeat } : {}),
    pacing,
    booter: config.booter !== 'none',
  });
  const urls = await headnode.start();
  for (const svc of ['cnapi', 'vmapi', 'napi', 'imgapi', 'sapi', 'fwapi', 'fwapiFast'] as const) {
    config.urls[svc] = urls[svc];
    config.sources[`${svc}Url`] = 'headnode';
  }
  config.urls.papi = urls.papi;
  return headnode;
}

/**
 * The dev DC's headnode server: made with the embedded dev headnode when the data dir has
 * none. A failure is logged and counted; the compute nodes work without it.
 */
export async function ensureHeadnodeServer(fleet: Fleet, factory: ServerFactory, log: Logger, countError: (kind: string) => void): Promise<void> {
  if (fleet.headnode()) return;
  try {
    const hn = await factory.createHeadnode();
    log.info({ server: hn.uuid }, 'created the dev DC\'s headnode server');
  } catch (err) {
    countError('headnode-server');
    log.error(failureFields(err), 'creating the dev DC\'s headnode server failed');
  }
}
