/** The CNAPI side of every mock CN's cn-agent: registration, agents, heartbeats, status. */
export { CnapiReporter, type CnapiReporterOptions, type MessageKind, type ReporterCounters } from './reporter.js';
export { buildStatusSample, type StatusSample, type StatusVm } from './status-sample.js';
export { DEFAULT_REPORTER_TIMINGS, backoffDelay, resolveTimings, type ReporterTimings, type BackoffOptions } from './timings.js';
