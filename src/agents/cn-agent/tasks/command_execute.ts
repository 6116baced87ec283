import { defineTask } from '../types.js';
import { optArrayParam, optNumberParam, optObjectParam, stringParam } from './params.js';

/**
 * command_execute: a mock CN has no OS to run a script in. The task succeeds (HTTP 200) with
 * a failed execution, because that is what CNAPI's callers are built for: CNAPI's
 * `POST /servers/:uuid/execute` passes `{exitCode, stdout, stderr}` through to `json`
 * callers and turns a non-zero exitCode into its own 500 "Error executing on remote system"
 * for the others, exactly as for a script that failed on a real CN. A 500 from the agent
 * would instead surface as an opaque "posting task to cn-agent" error. 126 is the shell's
 * "command cannot execute" status (the original dummy used 666, not a valid exit status).
 */
export const COMMAND_EXECUTE_EXIT_CODE = 126;
export const COMMAND_EXECUTE_MESSAGE = 'command_execute is not supported on a mock CN (mockcloud)';

export const commandExecute = defineTask<{ script: string }>({
  name: 'command_execute',
  queue: 'server_tasks',
  validate: (p) => {
    const script = stringParam(p, 'script');
    optArrayParam(p, 'args');
    optObjectParam(p, 'env');
    optNumberParam(p, 'timeout');
    return { script };
  },
  async run(ctx) {
    ctx.log.warn({ params: ctx.rawParams }, COMMAND_EXECUTE_MESSAGE);
    return {
      err: { message: COMMAND_EXECUTE_MESSAGE },
      exitCode: COMMAND_EXECUTE_EXIT_CODE,
      signal: null,
      stderr: `cn-agent: ${COMMAND_EXECUTE_MESSAGE}\n`,
      stdout: '',
    };
  },
});
