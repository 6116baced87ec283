/** cmon-agent: metrics for CMON, for every mock CN, on one listener. */
export {
  CmonAgentPlugin,
  createCmonAgentPlugin,
  parseCmonOpts,
  CMON_OPTS_HEADER,
  CMON_AGENT_PORT,
  DEFAULT_CMON_AGENT_OPTIONS,
  type CmonAgentOptions,
} from './plugin.js';
export { formatFamilies, type MetricFamily } from './prometheus.js';
export { hostIp, hostServerUuid } from './routing.js';
