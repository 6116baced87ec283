/** Fault events on CNs and their VMs: the engine behind POST /events (docs/events.md). */
export { EventsEngine, type EventCounts, type EventOrigin, type EventsHost } from './engine.js';
export { EVENT_LOG_FILE } from './event-log.js';
export { SERVER_STATES, serverState, type FaultState, type ServerState } from './server-state.js';
export { EVENT_TYPES, type EventType, type EventView, type EventLogRecord } from './types.js';
