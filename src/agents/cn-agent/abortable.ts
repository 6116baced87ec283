/** Waiting that a task's abort signal (timeout, CN detached, daemon stopping) can cut short. */

/** Node fires a longer setTimeout at once (with a warning): longer waits are taken in parts. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(reasonOf(signal));
  return new Promise((resolve, reject) => {
    let left = ms;
    let timer: NodeJS.Timeout;
    const arm = (): void => {
      const part = Math.min(left, MAX_TIMER_MS);
      left -= part;
      timer = setTimeout(() => {
        if (left > 0) return arm();
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, part);
    };
    const onAbort = () => {
      clearTimeout(timer);
      reject(reasonOf(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    arm();
  });
}

export function reasonOf(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}
