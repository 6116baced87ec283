/** The daemon's Prometheus metrics (docs/metrics.md): one registry per daemon, read at scrape time. */
export { DaemonMetrics, METRICS_CONTENT_TYPE, type DaemonMetricsOptions } from './daemon-metrics.js';
export type { MetricSources, ReporterView, TaskView } from './sources.js';
