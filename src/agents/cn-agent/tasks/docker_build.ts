/**
 * docker_build (sdc-cn-agent lib/backends/smartos/tasks/docker_build.js, bin/docker-build.js):
 * `docker build` and `docker commit` for sdc-docker (lib/backends/sdc/build.js). Its queue
 * has `log_params: false`: the params (a build payload can be huge) stay out of the task log.
 *
 * The task answers `{host, port}` of a listener on the CN's agent IP that closes after 60 s
 * without the client it waits for. For `payload.command: 'build'` it takes two clients:
 *
 * 1. the build context: the client sends the tar (maybe gzipped) and ends its side; it gets
 *    `{"message":"Context received","type":"message","messageId":N}` and the socket is closed;
 * 2. the build stream: newline-separated JSON events, each with a `messageId`: `message`,
 *    `stdout` (the build output), and the task events sdc-docker must answer with
 *    `{"type":"callback","messageId":N,"error"?,"result"?}` (`find_cached_image`,
 *    `image_reprovision`, `run`, `image_create`, `build_finished`); last `{"type":"end"}`
 *    (with `error` when the build failed), then the socket is closed.
 *
 * `command: 'commit'` takes the second client only and ends with `commit_finished`.
 * The steps are docker-build/steps.ts; publishing layers is docker-build/layers.ts.
 */
import type net from 'node:net';
import { advertisedHost, streamsOf, type StreamSession } from '../stream-listeners.js';
import { defineTask, type TaskContext } from '../types.js';
import { containerFilesOf, ContainerFs } from '../docker/container-fs.js';
import { MockBuilder, type BuildChannel, type ImageV2 } from '../docker-build/steps.js';
import { ImgapiWriter } from '../images/imgapi-writes.js';
import { invalid, isPlainObject, uuidParam } from '../task-support/params.js';

/** bin/docker-build.js SERVER_CLOSE_TIMEOUT. */
export const DOCKER_BUILD_LISTEN_SECONDS = 60;
/** The largest build context a mock CN takes (the real one writes it to the zone's disk). */
export const MAX_BUILD_CONTEXT_BYTES = 32 * 1024 * 1024;
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

interface BuildParams {
  uuid: string;
  payload: Record<string, unknown>;
  command: 'build' | 'commit';
}

function requireString(o: Record<string, unknown>, key: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw invalid(`payload.${key} (string) is required`);
  return v;
}

export const dockerBuildTask = defineTask<BuildParams>({
  name: 'docker_build',
  queue: 'docker_build_task',
  logParams: false,
  validate: (p) => {
    const uuid = uuidParam(p, 'uuid');
    const payload = p.payload;
    if (!isPlainObject(payload)) throw invalid('payload (object) is required');
    requireString(payload, 'account_uuid');
    const command = requireString(payload, 'command');
    requireString(payload, 'imgapi_url');
    if (payload.allDockerImages !== undefined && !Array.isArray(payload.allDockerImages)) {
      throw invalid('payload.allDockerImages ([object]) is required');
    }
    if (command === 'build') {
      requireString(payload, 'scratchImageUuid');
    } else if (command === 'commit') {
      const from = payload.fromImg;
      if (!isPlainObject(from)) throw invalid('message.payload.fromImg (object) is required');
      requireString(from, 'image_uuid');
    } else {
      throw invalid(`Unknown command type: ${command}`);
    }
    return { uuid, payload, command };
  },
  async run(ctx, p) {
    const host = advertisedHost(ctx.serverAddress, ctx.cn.sysinfo);
    const build = new BuildSession(ctx, p);
    const session = await streamsOf(ctx.env).open({
      untilDetach: ctx.untilDetach,
      name: 'docker_build',
      host: ctx.serverAddress.address,
      timeoutMs: DOCKER_BUILD_LISTEN_SECONDS * 1000,
      // Commit sends no build context.
      connections: p.command === 'commit' ? 1 : 2,
      allowHalfOpen: true,
      onConnection: (socket, index, s) => build.accept(socket, p.command === 'commit' ? index + 1 : index, s),
    });
    return { host, port: session.port };
  },
});

class BuildSession {
  private context: Buffer | undefined;
  private contextError: string | undefined;
  private buildSocket: net.Socket | undefined;
  private started = false;
  private signal: AbortSignal | undefined;
  private messageId = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  constructor(
    private readonly ctx: TaskContext,
    private readonly p: BuildParams,
  ) {}

  accept(socket: net.Socket, index: number, session: StreamSession): void {
    if (!this.signal) {
      this.signal = session.signal;
      session.signal.addEventListener('abort', () => this.failPending(new Error('the build connection closed')), { once: true });
    }
    if (index === 0) {
      this.receiveContext(socket);
      return;
    }
    this.buildSocket = socket;
    if (this.p.command === 'commit' || this.context || this.contextError) this.start();
  }

  private send(socket: net.Socket, event: Record<string, unknown>, done?: () => void): number {
    const id = this.messageId++;
    if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify({ ...event, messageId: id })}\n`, done);
    else done?.();
    return id;
  }

  private receiveContext(socket: net.Socket): void {
    const chunks: Buffer[] = [];
    let size = 0;
    socket.on('data', (c: Buffer) => {
      if (this.contextError) return;
      size += c.length;
      if (size > MAX_BUILD_CONTEXT_BYTES) {
        this.contextError = `the build context is larger than ${MAX_BUILD_CONTEXT_BYTES} bytes`;
        socket.destroy();
        if (this.buildSocket) this.start();
        return;
      }
      chunks.push(c);
    });
    socket.on('end', () => {
      if (this.contextError) return;
      this.context = Buffer.concat(chunks);
      this.send(socket, { message: 'Context received', type: 'message' }, () => socket.destroy());
      if (this.buildSocket) this.start();
    });
  }

  private failPending(err: Error): void {
    for (const w of this.pending.values()) w.reject(err);
    this.pending.clear();
  }

  private start(): void {
    if (this.started || !this.buildSocket) return;
    this.started = true;
    void this.run(this.buildSocket);
  }

  private listen(socket: net.Socket): void {
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (!line) continue;
        let event: { type?: unknown; messageId?: unknown; error?: unknown; result?: unknown };
        try {
          event = JSON.parse(line) as typeof event;
        } catch {
          this.ctx.env.log.warn({ line: line.slice(0, 200) }, 'docker_build: invalid json from the client');
          continue;
        }
        if (event.type !== 'callback' || typeof event.messageId !== 'number') continue;
        const waiter = this.pending.get(event.messageId);
        if (!waiter) continue;
        this.pending.delete(event.messageId);
        if (event.error) waiter.reject(new Error(String(event.error)));
        else waiter.resolve(event.result);
      }
      if (buffered.length > 1024 * 1024) buffered = '';
    });
    socket.on('close', () => this.failPending(new Error('the build connection closed')));
  }

  private async run(socket: net.Socket): Promise<void> {
    const { ctx, p } = this;
    const log = ctx.env.log;
    this.listen(socket);
    const channel: BuildChannel = {
      stdout: (message) => this.send(socket, { type: 'stdout', message }),
      request: (event) =>
        new Promise((resolve, reject) => {
          if (socket.destroyed) {
            reject(new Error('the build connection closed'));
            return;
          }
          const id = this.send(socket, event);
          this.pending.set(id, { resolve, reject });
        }),
    };
    this.send(socket, { message: `Starting ${p.command}`, type: 'message' });
    let error: string | undefined;
    try {
      if (this.contextError) throw new Error(this.contextError);
      const vm = ctx.cn.vms.get(p.uuid, { include_dni: true });
      if (!vm) throw new Error(`build container ${p.uuid} not found`);
      const builder = new MockBuilder({
        fs: new ContainerFs(vm, containerFilesOf(ctx.state, ctx.cn.vms), () => ctx.cn.vms.get(p.uuid, { include_dni: true })),
        context: this.context ?? Buffer.alloc(0),
        maxContextBytes: MAX_BUILD_CONTEXT_BYTES,
        payload: p.payload,
        zoneUuid: p.uuid,
        scratchImageUuid: typeof p.payload.scratchImageUuid === 'string' ? p.payload.scratchImageUuid : '',
        channel,
        publisher: {
          imgapi: new ImgapiWriter({ http: ctx.env.http, imgapiUrl: String(p.payload.imgapi_url), reqId: ctx.reqId }),
          owner: ZERO_UUID,
          request: channel.request,
        },
        setRunMetadata: async (meta) => {
          await ctx.cn.vms.update(p.uuid, { set_internal_metadata: meta });
        },
        signal: this.signal ?? new AbortController().signal,
        pace: (phase) => ctx.phase(phase),
      });
      if (p.command === 'commit') {
        const changes = Array.isArray(p.payload.changes) ? p.payload.changes.filter((c): c is string => typeof c === 'string') : [];
        const digest = await builder.commit(p.payload.fromImg as unknown as ImageV2, changes, {
          ...(typeof p.payload.author === 'string' ? { author: p.payload.author } : {}),
          ...(typeof p.payload.comment === 'string' ? { comment: p.payload.comment } : {}),
        });
        await channel.request({ finalImageDigest: digest, type: 'commit_finished' });
      } else {
        const digest = await builder.build();
        await channel.request({ finalImageDigest: digest, type: 'build_finished' });
      }
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      log.info({ err, vm: p.uuid }, 'docker_build: %s failed', p.command);
    }
    this.send(socket, error === undefined ? { type: 'end' } : { type: 'end', error }, () => socket.destroy());
  }
}
