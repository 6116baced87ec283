export { ImgapiService, IMGAPI_DOC, type ImgapiServiceOptions } from './service.js';
export { seedImages, serializeImage, stableUuid, type ImageManifest } from './images.js';
