export { VmapiService, type VmapiServiceOptions } from './service.js';
export { translateVm } from './translate.js';
