export { ConfigAgentPlugin, createConfigAgentPlugin, DEFAULT_CONFIG_AGENT_OPTIONS, resolveManifests, type ConfigAgentOptions, type PostCmdRecord } from './plugin.js';
export { AGENT_MANIFESTS, servesAgent, type LocalManifest } from './manifests.js';
