/**
 * The timing model (docs/timing.md): named, seeded profiles of how long things take on a
 * real SmartOS CN and Triton DC, chosen per daemon, per hardware profile and per event.
 */
export * from './catalogue.js';
export * from './figure.js';
export * from './profile.js';
export * from './builtin.js';
export * from './file.js';
export * from './timing.js';
export * from './wait.js';
export * from './resolve.js';
