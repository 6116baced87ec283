/**
 * docker_copy (sdc-cn-agent lib/backends/smartos/tasks/docker_copy.js, bin/docker-copy.js,
 * lib/docker-stdio.js setupDockerFileStream): what sdc-docker's `docker cp` and archive
 * endpoints use. `path` and `mode` (default `read`) come from the params, or from the
 * deprecated `payload` when `path` is absent.
 *
 * - `read`: the path must exist in the container (`no such file in container: <path>`,
 *   restCode FileNotFound; a file on the way is `path was not a directory: <path>`,
 *   PathNotDirectory). The answer is `{host, port, containerPathStat}`; the one client of the
 *   listener gets `gtar cf - -C <dirname> <basename>` of the path, then the end of the stream.
 * - `write`: the path must be a directory. The answer is `{host, port}`; the client sends a tar
 *   stream and ends its side; it is extracted into the path (`--overwrite`, or
 *   `--no-overwrite-dir` with `no_overwrite_dir`), then the stream ends.
 * - `stat`: `{host, containerPathStat}`, no listener.
 *
 * A stopped container on a platform older than 20160922T144810Z is refused
 * (DockerCopyStoppedContainerNoPlatformSupport). Listeners close after 30 s without a client.
 */
import type net from 'node:net';
import { messageOf } from '../../../common/errors.js';
import type { Vm } from '../../../vmadm/types.js';
import { advertisedHost, streamsOf } from '../stream-listeners.js';
import { defineTask, TaskError, type TaskContext } from '../types.js';
import {
  containerFilesOf,
  ContainerFs,
  normalizeContainerPath,
  readTar,
  tarOf,
  type FsNode,
} from '../docker/container-fs.js';
import { flagParam, invalid, isPlainObject, optStringParam, uuidParam } from '../task-support/params.js';
import { restCodeOf } from '../vmadm-bridge/vm-common.js';

/** bin/docker-copy.js SERVER_CLOSE_TIMEOUT. */
export const DOCKER_COPY_LISTEN_SECONDS = 30;
/** lib/docker-stdio.js SAFE_ZLOGIN_PI: older platforms cannot copy with a stopped zone. */
const SAFE_ZLOGIN_PI = '20160922T144810Z';

interface CopyParams {
  uuid: string;
  path: string;
  mode: string;
  noOverwriteDir: boolean;
}

/** What docker's client expects of a path: Go's os.FileMode bits, not stat(2)'s. */
export interface ContainerPathStat {
  name: string;
  size: number;
  mtime: string;
  linkTarget: string;
  mode: number;
}

export const dockerCopyTask = defineTask<CopyParams>({
  name: 'docker_copy',
  queue: 'docker_tasks',
  validate: (p) => {
    const uuid = uuidParam(p, 'uuid');
    let path = optStringParam(p, 'path');
    let mode = optStringParam(p, 'mode') || 'read';
    if (!path && p.payload !== undefined && p.payload !== null) {
      if (!isPlainObject(p.payload)) throw invalid('params.payload must be an object');
      path = optStringParam(p.payload, 'path');
      mode = optStringParam(p.payload, 'mode') || 'read';
    }
    if (!path) throw invalid('opts.path (string) is required');
    return { uuid, path, mode, noOverwriteDir: flagParam(p, 'no_overwrite_dir') };
  },
  async run(ctx, p) {
    const host = advertisedHost(ctx.serverAddress, ctx.cn.sysinfo);
    const norm = normalizeContainerPath(p.path);
    if (p.mode !== 'read' && p.mode !== 'write' && p.mode !== 'stat') throw new TaskError(`unknown mode: ${p.mode}`);

    // The real helpers stat /zones/<uuid>/root/<path> first: a missing VM has no such file.
    const known = ctx.cn.vms.get(p.uuid);
    const fs = known ? new ContainerFs(known, containerFilesOf(ctx.state, ctx.cn.vms)) : undefined;
    const found = fs?.lookup(norm) ?? ({ error: 'ENOENT' } as const);
    if ('error' in found) {
      if (found.error === 'ENOTDIR') throw new TaskError(`path was not a directory: ${norm}`, { restCode: 'PathNotDirectory' });
      throw new TaskError(`no such file in container: ${norm}`, { restCode: 'FileNotFound' });
    }
    if (p.mode === 'write' && found.node.type !== 'dir') {
      throw new TaskError(`path was not a directory: ${norm}`, { restCode: 'PathNotDirectory' });
    }
    const containerPathStat = p.mode === 'write' ? undefined : pathStat(fs!, norm, found.node);
    if (p.mode === 'stat') return { host, containerPathStat };

    const vm = await loadForCopy(ctx, p.uuid);
    const platform = String(ctx.cn.sysinfo['Live Image'] ?? '');
    if (vm.zone_state !== 'running' && platform < SAFE_ZLOGIN_PI) {
      throw new TaskError(`docker cp on stopped container not supported on platform image ${platform}`, {
        restCode: 'DockerCopyStoppedContainerNoPlatformSupport',
      });
    }

    const session = await streamsOf(ctx.env).open({
      untilDetach: ctx.untilDetach,
      name: 'docker_copy',
      host: ctx.serverAddress.address,
      timeoutMs: DOCKER_COPY_LISTEN_SECONDS * 1000,
      allowHalfOpen: p.mode === 'write',
      onConnection: (socket) => {
        if (p.mode === 'read') sendArchive(ctx, p.uuid, norm, socket);
        else void receiveArchive(ctx, p, norm, socket);
      },
    });
    return containerPathStat ? { host, port: session.port, containerPathStat } : { host, port: session.port };
  },
});

async function loadForCopy(ctx: TaskContext, uuid: string): Promise<Vm> {
  try {
    return await ctx.cn.vms.load(uuid);
  } catch (err) {
    const restCode = restCodeOf(err);
    throw new TaskError(messageOf(err), restCode ? { restCode } : undefined);
  }
}

/** `dockerPathStatFromPath`: name without the leading slash; mode 1<<31 dir, 1<<26 symlink. */
function pathStat(fs: ContainerFs, norm: string, node: FsNode): ContainerPathStat {
  const size = node.type === 'file' ? node.content.length : node.type === 'dir' ? fs.children(norm).length + 2 : node.target.length;
  return {
    name: norm.replace(/^\//, ''),
    size,
    mtime: node.mtime.toISOString(),
    linkTarget: node.type === 'symlink' ? node.target : '',
    mode: node.type === 'dir' ? (1 << 31) >>> 0 : node.type === 'symlink' ? (1 << 26) >>> 0 : 0,
  };
}

/** The container as it is when the client connects (a copy in may have changed it). */
function fsAtConnect(ctx: TaskContext, uuid: string): ContainerFs | undefined {
  const vm = ctx.cn.vms.get(uuid, { include_dni: true });
  return vm ? new ContainerFs(vm, containerFilesOf(ctx.state, ctx.cn.vms)) : undefined;
}

function sendArchive(ctx: TaskContext, uuid: string, norm: string, socket: net.Socket): void {
  const fs = fsAtConnect(ctx, uuid);
  if (!fs || 'error' in fs.lookup(norm)) {
    // gtar fails on a path that went away: nothing but the end of the stream.
    socket.end();
    return;
  }
  socket.end(tarOf(fs, norm));
}

async function receiveArchive(ctx: TaskContext, p: CopyParams, norm: string, socket: net.Socket): Promise<void> {
  const files = containerFilesOf(ctx.state, ctx.cn.vms);
  const limit = files.maxBytes - files.totalBytes;
  const chunks: Buffer[] = [];
  let size = 0;
  const received = await new Promise<Buffer | undefined>((resolve) => {
    socket.on('data', (c: Buffer) => {
      size += c.length;
      // Room for tar headers on top of the content budget.
      if (size > limit + 1024 * 1024) {
        ctx.env.log.warn({ vm: p.uuid, bytes: size }, 'docker_copy: archive larger than the container file budget');
        resolve(undefined);
        return;
      }
      chunks.push(c);
    });
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('close', () => resolve(undefined));
  });
  if (!received) {
    socket.destroy();
    return;
  }
  const fs = fsAtConnect(ctx, p.uuid);
  try {
    if (!fs) throw new Error('the container is gone');
    const members = await readTar(received, Math.max(0, limit));
    for (const m of members) {
      const dest = normalizeContainerPath(`${norm}/${m.name}`);
      const existing = fs.lookup(dest);
      const clash = 'node' in existing && (existing.node.type === 'dir') !== (m.node.type === 'dir');
      // --no-overwrite-dir keeps a directory from being replaced by a file, or the reverse.
      if (clash && p.noOverwriteDir) continue;
      if (!fs.write(dest, m.node)) throw new Error(`cannot write ${dest}: No space left on device`);
    }
  } catch (err) {
    // gtar's complaints go to the agent's log only; the client sees the stream end.
    ctx.env.log.warn({ err, vm: p.uuid }, 'docker_copy: extracting the archive failed');
  }
  socket.end();
}
