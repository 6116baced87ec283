export { createFirewallerPlugin, createPredicate, DEFAULT_FIREWALLER_OPTIONS, FirewallerPlugin, type FirewallerOptions } from './plugin.js';
export { parseRule, ruleAppliesTo, type RemoteVm, type RuleData } from './rules.js';
