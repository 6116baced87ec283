/**
 * The embedded dev headnode: NAPI, IMGAPI, SAPI, CNAPI and VMAPI subsets with shared
 * persistence. `Headnode` starts all five; the services can also be used one by one.
 */
export { Headnode, HEADNODE_JSON, type HeadnodeOptions, type HeadnodePorts, type HeadnodeUrls } from './headnode.js';
export { HeadnodeStore, StateDocument, type DocIo, type HeadnodeStoreOptions } from './store.js';
export { NapiService, DEFAULT_HEADNODE_ADMIN_UUID, type NapiServiceOptions } from './napi/index.js';
export { ImgapiService, type ImgapiServiceOptions } from './imgapi/index.js';
export { CnapiService, type CnapiServiceOptions } from './cnapi/index.js';
export { VmapiService, type VmapiServiceOptions } from './vmapi/index.js';
export { SapiService, type SapiServiceOptions } from './sapi/index.js';
