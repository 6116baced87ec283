/**
 * The agents' retry schedule (vm-agent's and net-agent's pushes, net-agent's changefeed
 * reconnect): `minMs`, doubling with each attempt, capped at `maxMs`. `attempt` 0 is the first
 * retry.
 */
export function doublingDelay(minMs: number, maxMs: number, attempt: number): number {
  // The exponent is bounded so that a long outage never reaches Infinity.
  return Math.min(maxMs, minMs * Math.pow(2, Math.min(attempt, 30)));
}
