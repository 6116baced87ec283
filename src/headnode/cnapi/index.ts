export { CnapiService, type CnapiServiceOptions } from './service.js';
export { HEARTBEAT_LIFETIME_MS, HEARTBEAT_RECONCILIATION_PERIOD_MS } from './heartbeats.js';
export type { TaskRecord } from './tasks.js';
