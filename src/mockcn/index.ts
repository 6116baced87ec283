/** What a mock CN is: layout, sysinfo, profiles, agents, creation and loading. */
export * from './types.js';
export * from './layout.js';
export * from './profiles.js';
export * from './sysinfo-template.js';
export * from './sysinfo-file.js';
export * from './sysinfo-keys.js';
export * from './agents-dir.js';
export * from './server-dir.js';
export * from './mock-cn.js';
export * from './load-server.js';
export * from './power-cycle.js';
