/**
 * The agent plug-ins every daemon runs besides cn-agent (vm-agent, net-agent, cmon-agent from
 * src/agents/*), registered here as they are written.
 */
import type { CnAgentPluginFactory } from './agent-plugin.js';

export const DEFAULT_PLUGINS: readonly CnAgentPluginFactory[] = [];
