/**
 * How a task keeps something it leaves running past its own end (a docker task's stream
 * listener, a migration process) until its CN is detached or cn-agent stops: `close` is then
 * called and awaited. Returns the function that drops it once it has ended by itself. Throws
 * when the CN is already being detached. CnSlot implements it; a task has it as
 * `ctx.untilDetach`.
 */
export type UntilDetach = (close: () => void | Promise<void>) => () => void;
