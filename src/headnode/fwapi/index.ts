export { FwapiService, FWAPI_DOC, type FwapiServiceOptions } from './service.js';
