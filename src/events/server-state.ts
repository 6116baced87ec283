/** What events make of a CN's state, as every view of the fleet names it (the metrics, the fleet page). */

export const SERVER_STATES = ['running', 'offline', 'partitioned', 'rebooting'] as const;
export type ServerState = (typeof SERVER_STATES)[number];

/** What an event does to a CN now (EventsEngine.faultState): holds it down, cuts it off, or nothing. */
export type FaultState = 'offline' | 'partitioned' | undefined;

/** Down is offline while an event holds it (offline, flap), else rebooting; up and cut off is partitioned. */
export function serverState(power: 'up' | 'down', fault: FaultState): ServerState {
  if (fault === 'offline') return 'offline';
  if (power === 'down') return 'rebooting';
  return fault === 'partitioned' ? 'partitioned' : 'running';
}
