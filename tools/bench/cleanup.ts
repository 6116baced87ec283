/**
 * What must not outlive the benchmark when it is interrupted (Ctrl-C, SIGTERM): the daemon
 * processes it started and its temp data dirs. Each registers an undo here while it exists;
 * `cleanUpNow()` runs them synchronously from a signal handler.
 */
type Undo = () => void;

const undos = new Set<Undo>();

/** Register a synchronous undo; returns a function that unregisters it. */
export function onInterrupt(undo: Undo): () => void {
  undos.add(undo);
  return () => undos.delete(undo);
}

export function cleanUpNow(): void {
  for (const undo of [...undos]) {
    try {
      undo();
    } catch {
      // best effort: keep undoing the rest
    }
  }
  undos.clear();
}
