/** The daemon's Prometheus metrics (docs/metrics.md): one registry per daemon, read at scrape time. */
export { DaemonMetrics, METRICS_CONTENT_TYPE, SERVER_STATES, serverState, type DaemonMetricsOptions, type ServerState } from './daemon-metrics.js';
export type { MetricSources, ReporterView, TaskView } from './sources.js';
