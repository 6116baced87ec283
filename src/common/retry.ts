/**
 * Trying a step again after a delay that doubles each time (with jitter, capped), for the
 * clean-up calls that must not be given up on at the first failure: NAPI, CNAPI and VMAPI
 * when a mock CN is deleted or a creation is undone.
 */

export interface RetryOptions {
  /** Tries in all (default 5). */
  attempts?: number;
  /** Delay before the second try (default 100 ms); doubled each time up to maxDelayMs. */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Give up early when this says the failure will not go away (a 4xx, ...). */
  retryable?: (err: unknown) => boolean;
  /** Stop waiting (the daemon is stopping): the last error is thrown at once. */
  stopped?: () => boolean;
}

export async function retryWithBackoff<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const attempts = Math.max(1, opts.attempts ?? 5);
  const min = opts.minDelayMs ?? 100;
  const max = opts.maxDelayMs ?? 3000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= attempts || opts.stopped?.() || (opts.retryable && !opts.retryable(err))) throw err;
      const delay = Math.min(max, min * 2 ** (attempt - 1));
      await new Promise((r) => setTimeout(r, delay / 2 + Math.random() * (delay / 2)));
    }
  }
}
