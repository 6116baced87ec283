/**
 * docker_exec (sdc-cn-agent lib/backends/smartos/tasks/docker_exec.js, bin/docker-exec.js,
 * lib/docker-stdio.js): what sdc-docker's exec, attach and logs use.
 *
 * - The VM must be running (`docker_exec: VM is not running, cannot exec`, restCode
 *   VmNotRunning), except for `AttachConsole`, which waits up to 60 s for it to start, and
 *   `Logs`, which never checks. A VM that cannot be loaded fails with vmadm's message and
 *   restCode.
 * - `Detach`: the command is started and the task finishes with `{}` (no listener).
 * - Otherwise the task answers `{host, port}`: a listener on the CN's agent IP that closes
 *   when nobody connects within 30 s. Its one client gets the command's output framed as
 *   docker/stdio.ts describes, then `{"type":"end","data":{"code","signal"}}`, then the end of
 *   the stream. `Logs` streams the container's stdio log (a mock container has none: the
 *   stream just ends); `AttachConsole` streams what the container's init command
 *   (`docker:entrypoint` + `docker:cmd`) prints.
 */
import type net from 'node:net';
import { messageOf } from '../../../common/errors.js';
import type { Vm } from '../../../vmadm/types.js';
import { advertisedHost, streamsOf, type StreamSession } from '../stream-listeners.js';
import { defineTask, TaskError, type TaskContext } from '../types.js';
import { containerFilesOf, ContainerFs } from '../docker/container-fs.js';
import { dockerExec, StdinQueue, type ExecIo } from '../docker/container-exec.js';
import { clientMessages, tryEnd, writeData, writeEnd } from '../docker/stdio.js';
import { invalid, isPlainObject, uuidParam } from '../task-support/params.js';
import { restCodeOf } from '../vmadm-bridge/vm-common.js';

/** bin/docker-exec.js SERVER_CLOSE_TIMEOUT. */
export const DOCKER_EXEC_LISTEN_SECONDS = 30;
/** tasks/docker_exec.js WAIT_TIMEOUT and RUNNING_CHECK_INTERVAL. */
const ATTACH_WAIT_SECONDS = 60;
const RUNNING_CHECK_MS = 200;

export interface DockerCommand {
  Cmd: string[];
  AttachStdin?: boolean;
  Tty?: boolean;
  Detach?: boolean;
  AttachConsole?: boolean;
  Logs?: boolean;
  [key: string]: unknown;
}

export const dockerExecTask = defineTask<{ uuid: string; command: DockerCommand }>({
  name: 'docker_exec',
  queue: 'docker_tasks',
  validate: (p) => {
    const uuid = uuidParam(p, 'uuid');
    const command = p.command;
    if (command === undefined) throw invalid("Missing key 'command' in params");
    if (!isPlainObject(command)) throw invalid('params.command must be an object');
    const cmd = command.Cmd;
    if (!Array.isArray(cmd) || !cmd.every((c) => typeof c === 'string')) {
      throw invalid('params.command.Cmd must be an array of strings');
    }
    return { uuid, command: command as DockerCommand };
  },
  async run(ctx, p) {
    const command = p.command;
    const isLogs = command.Logs === true && command.Cmd[0] === 'Logs';
    if (!isLogs) await whenExecutable(ctx, p.uuid, command);

    if (command.Detach) {
      // The real agent spawns the command with no one to read its output.
      ctx.log.info({ cmd: command.Cmd }, 'docker_exec: detached command started');
      return {};
    }

    const streams = streamsOf(ctx.env);
    const session = await streams.open({
      untilDetach: ctx.untilDetach,
      name: 'docker_exec',
      host: ctx.serverAddress.address,
      timeoutMs: DOCKER_EXEC_LISTEN_SECONDS * 1000,
      onConnection: (socket, _i, s) => {
        if (isLogs) {
          // `cat /zones/<uuid>/logs/stdio.log`: a mock container has written none.
          tryEnd(socket);
          return;
        }
        void serveCommand(ctx, p.uuid, command, socket, s);
      },
    });
    return { host: advertisedHost(ctx.serverAddress, ctx.cn.sysinfo), port: session.port };
  },
});

/** `execWhenRunning`: the VM, once it is running. */
async function whenExecutable(ctx: TaskContext, uuid: string, command: DockerCommand): Promise<Vm> {
  const deadline = Date.now() + ATTACH_WAIT_SECONDS * 1000;
  for (;;) {
    let vm: Vm;
    try {
      vm = await ctx.cn.vms.load(uuid);
    } catch (err) {
      const restCode = restCodeOf(err);
      throw new TaskError(messageOf(err), restCode ? { restCode } : undefined);
    }
    if (vm.zone_state === 'running') return vm;
    if (!command.AttachConsole) {
      throw new TaskError('docker_exec: VM is not running, cannot exec', { restCode: 'VmNotRunning' });
    }
    if (Date.now() > deadline) throw new TaskError('timed out waiting for container to be attachable');
    await ctx.sleep(RUNNING_CHECK_MS);
  }
}

/** The init command of a docker container: `docker:entrypoint` then `docker:cmd`. */
function initCommand(vm: Vm): string[] {
  const list = (key: string): string[] => {
    const raw = vm.internal_metadata?.[key];
    if (typeof raw !== 'string') return [];
    try {
      const v: unknown = JSON.parse(raw);
      return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
    } catch {
      return [];
    }
  };
  return [...list('docker:entrypoint'), ...list('docker:cmd')];
}

async function serveCommand(
  ctx: TaskContext,
  uuid: string,
  command: DockerCommand,
  socket: net.Socket,
  session: StreamSession,
): Promise<void> {
  const vm = ctx.cn.vms.get(uuid, { include_dni: true });
  if (!vm) {
    socket.destroy();
    return;
  }
  const tty = command.Tty === true;
  const stdin = new StdinQueue();
  socket.on('end', () => stdin.end());
  clientMessages(
    socket,
    (m) => {
      if (m.type === 'end') stdin.end();
      else if ((m.type === 'stdin' || m.type === 'tty') && command.AttachStdin) stdin.push(m.data);
    },
    (line) => ctx.env.log.debug({ line: line.slice(0, 200) }, 'docker_exec: bad client line'),
  );
  // A pty turns each newline into CR LF.
  const crlf = (s: string) => (tty ? s.replace(/(?<!\r)\n/g, '\r\n') : s);
  const io: ExecIo = {
    stdout: (s) => writeData(socket, tty ? 'tty' : 'stdout', crlf(s)),
    stderr: (s) => writeData(socket, tty ? 'tty' : 'stderr', crlf(s)),
    readStdin: () => stdin.read(),
  };
  const argv = command.AttachConsole ? initCommand(vm) : command.Cmd;
  const platform = String(ctx.cn.sysinfo['Live Image'] ?? '');
  const fs = new ContainerFs(vm, containerFilesOf(ctx.state, ctx.cn.vms));
  let code: number;
  try {
    code = argv.length === 0 && command.AttachConsole ? 0 : await dockerExec(argv, { fs, vm, platform, io, signal: session.signal });
  } catch (err) {
    // The client went away (or the daemon is stopping) while the command ran.
    if (!session.signal.aborted) ctx.env.log.warn({ err }, 'docker_exec: command failed');
    socket.destroy();
    return;
  }
  await writeEnd(socket, { code, signal: null });
  tryEnd(socket);
}
