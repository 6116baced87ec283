/**
 * cn-agent for every mock CN: the shared HTTP server (`CnAgentServer`), the in-process task
 * runner with its history and fault-injection seam, and every task. The CNAPI reporter
 * (sysinfo registration, agents, heartbeats, status) lives in ./cnapi-reporter.
 */
export { CnAgentServer, type CnAgentServerOptions, type RejectionCounters } from './server.js';
export { TaskRunner, DEFAULT_TASK_TIMEOUT_SECONDS, type TaskCounters, type TaskEnd, type TaskOutcome } from './runner.js';
export { FaultInjector, validateFaultSpec, type FaultEffect, type FaultRule, type FaultSpec } from './faults.js';
export { HISTORY_SIZE, type HistoryEntry, type HistoryMessage } from './history.js';
export { TASKS, TASK_REGISTRY, findTask } from './tasks/index.js';
export { COMMAND_EXECUTE_EXIT_CODE, COMMAND_EXECUTE_MESSAGE } from './tasks/command_execute.js';
export type { TaskEnvironment, TaskContext, TaskDefinition, RegisteredTask } from './types.js';
export { TaskError } from './types.js';
