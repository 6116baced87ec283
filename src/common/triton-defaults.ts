/**
 * Facts of a COAL / dev Triton DC that every layer may need when nothing else is configured.
 * A leaf: the agents, the dev headnode and the daemon all read these, so they live below them.
 */

/** The admin user of a COAL / dev DC: the owner of admin NICs and images without `ufdsAdmin`. */
export const DEFAULT_ADMIN_UUID = '930896af-bf8c-48d4-885c-6573a94b1853';

/** The platform ("Live Image") of a dev DC's servers when the host gives none (not SmartOS). */
export const DEFAULT_PLATFORM = '20210826T002459Z';
