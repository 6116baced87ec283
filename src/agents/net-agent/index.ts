/** net-agent: every mock CN's NICs in NAPI, and NAPI's network properties in its VMs. */
export { NetAgentPlugin, createNetAgentPlugin, CHANGEFEED_RESOURCES, INSTANCE_FILE } from './plugin.js';
export { DEFAULT_NET_AGENT_OPTIONS, resolveNetAgentOptions, type NetAgentOptions } from './options.js';
export { ChangefeedListener, type ChangefeedItem, type ChangefeedResource } from './changefeed.js';
export { pushDownPayload } from './push-down.js';
export { serverLocalNics, vmLocalNics, normaliseMac, type LocalNic, type NapiNic } from './fields.js';
export { netAgentUserAgent } from './napi.js';
