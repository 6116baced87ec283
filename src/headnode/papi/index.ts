export { PapiService, type PapiServiceOptions } from './service.js';
