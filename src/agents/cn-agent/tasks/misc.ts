/**
 * The small tasks: nop, command_execute and server_overprovision_ratio.
 */
import { defineTask, TaskError } from '../types.js';
import { invalid, optArrayParam, optNumberParam, optObjectParam, optStringParam, stringParam } from './params.js';

/** nop: wait `sleep` seconds (CNAPI sends parseInt(sleep) || 0), then fail with `error` if set. */
export const nop = defineTask<{ sleepSeconds: number; error?: string }>({
  name: 'nop',
  queue: 'nop',
  validate: (p) => {
    let sleepSeconds = 0;
    const s = p.sleep;
    if (s !== undefined && s !== null && s !== '' && s !== false) {
      const n = typeof s === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(s) ? Number(s) : s;
      if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw invalid('params.sleep must be a number of seconds');
      sleepSeconds = n;
    }
    const error = optStringParam(p, 'error');
    return error ? { sleepSeconds, error } : { sleepSeconds };
  },
  async run(ctx, p) {
    if (p.sleepSeconds > 0) await ctx.sleep(p.sleepSeconds * 1000);
    if (p.error) throw new TaskError(p.error);
    return {};
  },
});

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

/**
 * server_overprovision_ratio: a real CN writes `overprovision_ratio` into its node config;
 * a mock CN remembers the value (in memory) and succeeds.
 */
export const serverOverprovisionRatio = defineTask<{ value: string | undefined }>({
  name: 'server_overprovision_ratio',
  queue: 'server_tasks',
  validate: (p) => {
    const v = p.value;
    if (typeof v === 'number' && Number.isFinite(v)) return { value: String(v) };
    return { value: optStringParam(p, 'value') };
  },
  async run(ctx, p) {
    if (!p.value) throw new TaskError('no value given');
    ctx.state.overprovisionRatio = p.value;
    ctx.log.info('overprovision_ratio set to %s', p.value);
    return {};
  },
});
