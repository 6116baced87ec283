/** RFD 82: every mock CN's agent instances adopted into SAPI, and deleted with the CN. */
export {
  SapiInstancesPlugin,
  createSapiInstancesPlugin,
  DEFAULT_SAPI_INSTANCES_OPTIONS,
  type AdoptResult,
  type SapiInstancesOptions,
} from './plugin.js';
export { PENDING_DELETES_FILE } from './pending-deletes.js';
