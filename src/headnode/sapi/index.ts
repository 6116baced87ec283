export { SapiService, SAPI_DOC, type SapiServiceOptions } from './service.js';
export { AGENT_SERVICE_NAMES, seedUuid } from './seed.js';
export type { SapiApplication, SapiInstance, SapiServiceObject } from './model.js';
