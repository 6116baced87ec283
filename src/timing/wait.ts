/**
 * Waiting a drawn duration on the daemon's one scheduler (src/runtime/scheduler.ts): one heap
 * entry per wait, never a timer of its own. Typed structurally, so the layers below the
 * runtime (the dev headnode, vmadm) take a `Wait` from the daemon without importing it.
 */

/** The part of the shared scheduler a wait needs. */
export interface SchedulesJobs {
  schedule(delayMs: number, fn: () => void): unknown;
  cancel(job: unknown): void;
}

/** Resolves after `ms`; rejects with the signal's reason if it aborts first. 0 ms: at once. */
export type Wait = (ms: number, signal?: AbortSignal) => Promise<void>;

export function waitOn(scheduler: SchedulesJobs): Wait {
  return (ms, signal) => {
    if (signal?.aborted) return Promise.reject(reasonOf(signal));
    if (!(ms > 0)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let job: unknown;
      const onAbort = (): void => {
        scheduler.cancel(job);
        reject(reasonOf(signal!));
      };
      job = scheduler.schedule(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  };
}

/** A wait that never waits: for components run without a scheduler (bare test servers). */
export const noWait: Wait = (_ms, signal) => (signal?.aborted ? Promise.reject(reasonOf(signal)) : Promise.resolve());

function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** What a component below the daemon gets to take time: draws by key, and waits. */
export interface Pacing {
  /** A fresh draw of the timing's figure for `key` (ms; 0 on instant). */
  ms(key: string): number;
  wait: Wait;
}
