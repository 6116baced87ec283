import { promises as fsp } from 'node:fs';
import os from 'node:os';
import { defineTask, TaskError } from '../types.js';
import { executeScript } from '../gz-scripts/execute-script.js';
import { gzCommandsEntry, prepareGzEnvironment } from '../gz-scripts/gz-snapshot.js';
import { invalid, optArrayParam, optNumberParam, optObjectParam, stringParam } from '../task-support/params.js';

/**
 * command_execute (CNAPI `POST /servers/:uuid/execute`).
 *
 * With `--allow-execute` the script runs as the real task runs it (gz-scripts/execute-script.ts), in a
 * shell on the daemon's host as the daemon's user, with mock global-zone commands answering
 * from this CN's state first on its PATH (gz-scripts/gz-snapshot.ts, docs/execute.md). The finish value
 * is the real one, `{err, exitCode, signal, stdout, stderr}`.
 *
 * Without it (the default: it runs anything anyone who can reach CNAPI sends) the task
 * succeeds (HTTP 200) with a failed execution, because that is what CNAPI's callers are built
 * for: CNAPI passes `{exitCode, stdout, stderr}` through to `json` callers and turns a
 * non-zero exitCode into its own 500 "Error executing on remote system" for the others,
 * exactly as for a script that failed on a real CN. A 500 from the agent would instead
 * surface as an opaque "posting task to cn-agent" error. 126 is the shell's "command cannot
 * execute" status (the original dummy used 666, not a valid exit status).
 */
export const COMMAND_EXECUTE_EXIT_CODE = 126;
export const COMMAND_EXECUTE_MESSAGE = 'command_execute is not supported on a mock CN (mockcloud)';

interface ExecuteParams {
  script: string;
  args: string[];
  env: Record<string, unknown>;
  timeout: number | undefined;
}

export const commandExecute = defineTask<ExecuteParams>({
  name: 'command_execute',
  queue: 'server_tasks',
  validate: (p) => {
    const script = stringParam(p, 'script');
    const args = optArrayParam(p, 'args') ?? [];
    // The real task hands args to forkexec, which takes strings only.
    if (!args.every((a) => typeof a === 'string')) throw invalid('params.args must be an array of strings');
    const env = optObjectParam(p, 'env') ?? {};
    const timeout = optNumberParam(p, 'timeout');
    return { script, args: args as string[], env, timeout };
  },
  async run(ctx, p) {
    if (!ctx.env.allowExecute) {
      ctx.log.warn({ params: ctx.rawParams }, COMMAND_EXECUTE_MESSAGE);
      return {
        err: { message: COMMAND_EXECUTE_MESSAGE },
        exitCode: COMMAND_EXECUTE_EXIT_CODE,
        signal: null,
        stderr: `cn-agent: ${COMMAND_EXECUTE_MESSAGE}\n`,
        stdout: '',
      };
    }
    const entry = gzCommandsEntry();
    if (!entry) throw new TaskError('the mock global-zone commands are not built (run `npm run build`)');
    const gz = await prepareGzEnvironment(ctx, entry);
    try {
      ctx.log.info('Executing script: %s', p.script);
      const results = await executeScript({
        script: p.script,
        args: p.args,
        env: p.env,
        timeoutMs: p.timeout,
        tmpDir: ctx.env.tmpDir ?? os.tmpdir(),
        binDir: gz.binDir,
        signal: ctx.signal,
      });
      ctx.log.info({ results }, 'Executed command');
      return { ...results };
    } finally {
      await fsp.rm(gz.dir, { recursive: true, force: true });
    }
  },
});
