/**
 * Counters that only grow. Each scrape advances every counter of a scope (one VM, or one CN's
 * global zone) by its current rate times the time since the previous scrape of that scope,
 * counting only time since the last boot. The first scrape of a scope starts each counter at
 * rate × uptime, so values look like a zone that has been running. A new series appearing later
 * (a NIC added) starts the same way. Scopes not scraped for `idleMs` are forgotten (`prune`).
 */

interface Scope {
  at: number;
  values: Map<string, number>;
}

export class CounterBank {
  private readonly scopes = new Map<string, Scope>();

  get size(): number {
    return this.scopes.size;
  }

  /**
   * @param rates counter key → units per second now (≥ 0)
   * @param bootMs when the scope last booted (epoch ms)
   * @returns counter key → value, each ≥ its value at the previous scrape
   */
  advance(scopeKey: string, now: number, bootMs: number, rates: ReadonlyMap<string, number>): Map<string, number> {
    const uptimeSec = Math.max(0, (now - bootMs) / 1000);
    let scope = this.scopes.get(scopeKey);
    if (!scope) {
      scope = { at: now, values: new Map() };
      this.scopes.set(scopeKey, scope);
    }
    // Only time the scope was up counts: a reboot since the last scrape pauses the counters.
    const elapsedSec = Math.max(0, Math.min(now - scope.at, now - bootMs)) / 1000;
    for (const [key, rate] of rates) {
      const r = rate > 0 && Number.isFinite(rate) ? rate : 0;
      const prev = scope.values.get(key);
      scope.values.set(key, prev === undefined ? r * uptimeSec : prev + r * elapsedSec);
    }
    scope.at = Math.max(scope.at, now);
    return scope.values;
  }

  /** Forget scopes whose key starts with `prefix` (a CN detached). */
  forgetPrefix(prefix: string): void {
    for (const key of this.scopes.keys()) if (key.startsWith(prefix)) this.scopes.delete(key);
  }

  /** Forget scopes not scraped since `before`. */
  prune(before: number): void {
    for (const [key, scope] of this.scopes) if (scope.at < before) this.scopes.delete(key);
  }
}
