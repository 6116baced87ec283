/** vm-agent: every mock CN's VM state to VMAPI. */
export { VmAgentPlugin, createVmAgentPlugin, type VmAgentCounters } from './plugin.js';
export { DEFAULT_VM_AGENT_OPTIONS, resolveVmAgentOptions, type VmAgentOptions } from './options.js';
export { COMPARE_FIELDS, sameOverComparedFields, selectVmsToPut } from './compare.js';
export { vmAgentUserAgent } from './vmapi.js';
