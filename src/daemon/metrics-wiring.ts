/**
 * What the daemon's metrics (src/metrics) read of its parts, at scrape time: the fleet, the
 * fault events, the CNAPI reporter, cn-agent's task admission and connections, the agent
 * plug-ins, the scheduler and the HTTP client. Parts not started yet (a scrape during start)
 * read as none. The daemon (daemon.ts) makes the metrics first in its start, so that every
 * component built after gets its observers.
 */
import type { CnapiReporter } from '../agents/cn-agent/cnapi-reporter/index.js';
import { CnAgentServer } from '../agents/cn-agent/index.js';
import type { JsonHttpClient } from '../common/http-client.js';
import type { EventsEngine } from '../events/index.js';
import { DaemonMetrics } from '../metrics/index.js';
import type { CnAgentPlugin } from '../runtime/agent-plugin.js';
import type { Scheduler } from '../runtime/scheduler.js';
import type { DaemonConfig } from './config.js';
import type { Fleet } from './fleet.js';
import type { CnAgentHost } from './services.js';
import { BUILD } from './version.js';

/** The daemon's parts as they are now; undefined until started. */
export interface MeteredParts {
  fleet: Fleet | undefined;
  events: EventsEngine | undefined;
  reporter: CnapiReporter | undefined;
  cnAgent: CnAgentHost | undefined;
  plugins: readonly CnAgentPlugin[];
}

/**
 * The metrics read what the components count, at scrape time; the observers go to the shared
 * HTTP client here, to cn-agent and the CNAPI reporter as they are built.
 */
export function createDaemonMetrics(o: {
  config: DaemonConfig;
  daemonId: string | undefined;
  scheduler: Scheduler;
  http: JsonHttpClient;
  errors: Map<string, number>;
  parts: () => MeteredParts;
}): DaemonMetrics {
  const { config, parts } = o;
  const metrics = new DaemonMetrics({
    urls: config.urls,
    labels: { datacenter: config.datacenterName, service: 'mockcloud' },
    daemon: { id: o.daemonId ?? '', version: BUILD.version, gitSha: BUILD.gitSha },
    sources: {
      servers: () => parts().fleet?.list() ?? [],
      faultState: (uuid) => parts().events?.faultState(uuid),
      reporter: () => parts().reporter,
      tasks: () => {
        const agent = parts().cnAgent;
        if (!agent) return undefined;
        if (!(agent instanceof CnAgentServer)) return { inFlight: agent.tasksInFlight ?? 0 };
        return {
          inFlight: agent.tasksInFlight,
          admission: agent.admission.stats(),
          rejected: agent.rejected,
          connections: { ...agent.connections.stats(), limits: agent.connections.limits },
        };
      },
      events: () => parts().events?.counts(),
      plugins: () => parts().plugins,
      scheduler: o.scheduler,
      http: o.http,
      errors: () => o.errors,
    },
  });
  o.http.observer = metrics.requestEnded;
  return metrics;
}
