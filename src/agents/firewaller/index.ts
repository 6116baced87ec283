export { createFirewallerPlugin, DEFAULT_FIREWALLER_OPTIONS, FirewallerPlugin, type FirewallerOptions } from './plugin.js';
export { createPredicate } from './sync-queries.js';
export { parseRule, ruleAppliesTo, type RemoteVm, type RuleData } from './rules.js';
