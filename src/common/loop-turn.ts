/**
 * When the event loop's current turn began reading answers. A busy daemon reads hundreds of
 * ms of I/O in one turn, all of it ready when the turn's poll began: an answer read late in the
 * turn had arrived by the time the turn read its first one. Code that times what a peer did
 * (a heartbeat's end, from which cn-agent counts its next 5 s) takes that moment instead of the
 * moment its own callback ran. One immediate per turn that reads answers; none while idle.
 */
let startedAt: number | undefined;
let clearing = false;

function clear(): void {
  startedAt = undefined;
  clearing = false;
}

/** An answer is being read now: the first one of the turn marks its start. */
export function noteAnswerRead(): void {
  if (startedAt !== undefined) return;
  startedAt = performance.now();
  if (!clearing) {
    clearing = true;
    setImmediate(clear);
  }
}

/** When this turn read its first answer (`performance.now()`, the scheduler's clock); undefined outside such a turn. */
export function turnReadStartedAt(): number | undefined {
  return startedAt;
}
