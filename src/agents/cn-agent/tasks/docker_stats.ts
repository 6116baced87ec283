/**
 * docker_stats (sdc-cn-agent lib/backends/smartos/tasks/docker_stats.js, bin/docker-stats.js):
 * what sdc-docker's `GET /containers/:id/stats` pipes to its client.
 *
 * The task answers `{host, port}` of a listener on the CN's agent IP that closes after 60 s
 * without a client. Like the real task it does not look the VM up: a VM that is missing or not
 * running just has no zone figures in its records (docker/stats-sample.ts). The one client gets
 * a JSON record and `\r\n` at once, then every second while `payload.doStream` is true; with
 * `doStream` false it gets one record and the connection is closed. The stream stops when the
 * client ends its side. A `doStream` that is not a boolean makes the real helper die on its
 * assertion when the client connects: the connection is closed with nothing sent.
 */
import type net from 'node:net';
import { advertisedHost, streamsOf, type StreamSession } from '../stream-listeners.js';
import { defineTask, type TaskContext } from '../types.js';
import { dockerStatsRecord, type DockerStatsRecord } from '../docker/stats-sample.js';
import { invalid, isPlainObject, uuidParam } from '../task-support/params.js';

/** bin/docker-stats.js SERVER_CLOSE_TIMEOUT and UPDATE_FREQUENCY_MS. */
export const DOCKER_STATS_LISTEN_SECONDS = 60;
export const DOCKER_STATS_INTERVAL_MS = 1000;
const MAX_UNREAD_BYTES = 1024 * 1024;

interface StatsParams {
  uuid: string;
  payload: Record<string, unknown>;
}

export const dockerStatsTask = defineTask<StatsParams>({
  name: 'docker_stats',
  queue: 'docker_tasks',
  validate: (p) => {
    const uuid = uuidParam(p, 'uuid');
    if (!isPlainObject(p.payload)) throw invalid('payload (object) is required');
    return { uuid, payload: p.payload };
  },
  async run(ctx, p) {
    const host = advertisedHost(ctx.serverAddress, ctx.cn.sysinfo);
    const session = await streamsOf(ctx.env).open({
      untilDetach: ctx.untilDetach,
      name: 'docker_stats',
      host: ctx.serverAddress.address,
      timeoutMs: DOCKER_STATS_LISTEN_SECONDS * 1000,
      onConnection: (socket, _i, s) => streamStats(ctx, p, socket, s),
    });
    return { host, port: session.port };
  },
});

function streamStats(ctx: TaskContext, p: StatsParams, socket: net.Socket, session: StreamSession): void {
  const doStream = p.payload.doStream;
  const version = p.payload.clientApiVersion;
  if (typeof doStream !== 'boolean' || (version !== undefined && typeof version !== 'number')) {
    socket.destroy();
    return;
  }
  let last: DockerStatsRecord | null = null;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!socket.destroyed) socket.destroy();
  };
  session.signal.addEventListener('abort', stop, { once: true });
  socket.on('end', stop);
  const collect = () => {
    if (socket.destroyed) return;
    const vm = ctx.cn.vms.get(p.uuid, { include_dni: true });
    const record = dockerStatsRecord(vm, {
      now: Date.now(),
      last,
      ...(typeof version === 'number' ? { clientApiVersion: version } : {}),
    });
    const line = `${JSON.stringify(record)}\r\n`;
    if (!doStream) {
      socket.write(line, stop);
      return;
    }
    socket.write(line);
    // A client that stops reading does not make us buffer its records without end.
    if (socket.writableLength > MAX_UNREAD_BYTES) {
      stop();
      return;
    }
    last = record;
    timer = setTimeout(collect, DOCKER_STATS_INTERVAL_MS);
  };
  collect();
}
