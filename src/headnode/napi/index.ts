export { NapiService, DEFAULT_HEADNODE_ADMIN_UUID, NAPI_DOC, type NapiServiceOptions } from './service.js';
export { DEFAULT_SEED_NETWORKS, type SeedNetwork } from './seed.js';
export { NAPI_CHANGEFEED_RESOURCES, type ChangeItem, type ResourceConfig } from '../../common/changefeed/protocol.js';
