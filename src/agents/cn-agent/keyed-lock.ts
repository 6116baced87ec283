/**
 * Exclusive locks by key, first come first served: what serialises tasks on one VM (a destroy
 * waits for an in-flight create) and the agents / sysinfo writers of one CN. A key costs
 * memory only while someone holds or waits for it.
 */

interface Waiter {
  grant: () => void;
}

export class KeyedLock {
  private readonly queues = new Map<string, Waiter[]>();

  /** Number of keys held right now. */
  get heldCount(): number {
    return this.queues.size;
  }

  isHeld(key: string): boolean {
    return this.queues.has(key);
  }

  /**
   * Take every key (in sorted order, so two tasks wanting the same keys cannot deadlock).
   * Resolves with the release function; rejects, holding nothing, if `signal` aborts first.
   */
  async acquire(keys: readonly string[], signal?: AbortSignal): Promise<() => void> {
    const sorted = [...new Set(keys)].sort();
    const releases: (() => void)[] = [];
    try {
      for (const key of sorted) releases.push(await this.acquireOne(key, signal));
    } catch (err) {
      for (const r of releases.reverse()) r();
      throw err;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const r of releases.reverse()) r();
    };
  }

  private acquireOne(key: string, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const queue = this.queues.get(key);
    const release = () => this.release(key);
    if (!queue) {
      this.queues.set(key, [{ grant: () => undefined }]);
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      const onAbort = () => {
        const q = this.queues.get(key);
        const i = q ? q.indexOf(waiter) : -1;
        if (q && i > 0) q.splice(i, 1);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.push(waiter);
    });
  }

  private release(key: string): void {
    const queue = this.queues.get(key);
    if (!queue) return;
    queue.shift();
    const next = queue[0];
    if (next) next.grant();
    else this.queues.delete(key);
  }
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}
