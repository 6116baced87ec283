/**
 * The real agent runs each task in a child process (sdc-cn-agent lib/task_agent/
 * task_runner.js). A task that throws (a failed `assert` on its params, a task module that
 * cannot be loaded) kills that child, and the task fails with this message.
 */
export function childCrash(task: string, exitCode = 1): string {
  return `Child task process ${task} did not terminate cleanly. (${exitCode})`;
}
