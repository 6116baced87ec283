/**
 * The sdc-docker side of the docker tasks' streams, for tests: connect to the `{host, port}`
 * a task answered and read what a real consumer reads (sdc-docker lib/backends/sdc/
 * containers.js `_runExec`, `containerStats`, `containerArchiveStream`; lib/backends/sdc/
 * build.js `buildSendContext` / `buildFromContext`). Every wait is bounded.
 */
import net from 'node:net';
import readline from 'node:readline';
import { Header, Parser, type ReadEntry } from 'tar';

export function connect(host: string, port: number, opts: { allowHalfOpen?: boolean } = {}): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection({ host, port, allowHalfOpen: opts.allowHalfOpen === true });
    s.once('connect', () => {
      s.removeListener('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Everything the server sends until the connection closes (or `timeoutMs`: rejects). */
export function readUntilClose(socket: net.Socket, timeoutMs = 10_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the stream did not close within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
  });
}

/** Parse `sep`-terminated JSON lines; every line must be JSON and end with `sep`. */
export function jsonLines(data: Buffer | string, sep = '\r\n'): any[] {
  const text = data.toString();
  if (text === '') return [];
  if (!text.endsWith(sep)) throw new Error(`stream does not end with ${JSON.stringify(sep)}: ${JSON.stringify(text.slice(-80))}`);
  return text
    .slice(0, -sep.length)
    .split(sep)
    .map((l) => JSON.parse(l));
}

export interface TarEntry {
  path: string;
  type: string;
  mode: number | undefined;
  uid: number | undefined;
  linkpath: string | undefined;
  content: string;
}

/** The members of a tar stream, with tar's own parser. */
export function tarEntries(data: Buffer): Promise<TarEntry[]> {
  return new Promise((resolve, reject) => {
    const out: TarEntry[] = [];
    const p = new Parser({
      strict: true,
      onReadEntry: (e: ReadEntry) => {
        const chunks: Buffer[] = [];
        e.on('data', (c: Buffer) => chunks.push(c));
        e.on('end', () =>
          out.push({ path: e.path, type: e.type, mode: e.mode, uid: e.uid, linkpath: e.linkpath, content: Buffer.concat(chunks).toString() }),
        );
      },
    });
    p.on('error', reject);
    p.on('end', () => resolve(out));
    p.end(data);
  });
}

/** A tar archive of these files (headers encoded by tar's own Header). */
export function makeTar(files: Record<string, string>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, content] of Object.entries(files)) {
    const body = Buffer.from(content);
    const h = new Header({ path: name, mode: 0o644, size: body.length, mtime: new Date(1_700_000_000_000), type: 'File', uid: 0, gid: 0 });
    const block = Buffer.alloc(512);
    h.encode(block, 0);
    blocks.push(block, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** Run one docker_exec stream: optional stdin frames, then read until the server closes. */
export async function execStream(
  host: string,
  port: number,
  opts: { stdin?: string[]; endStdin?: boolean } = {},
): Promise<{ frames: any[]; raw: string }> {
  const socket = await connect(host, port);
  const done = readUntilClose(socket);
  for (const data of opts.stdin ?? []) socket.write(`${JSON.stringify({ type: 'stdin', data })}\r\n`);
  if (opts.endStdin) socket.write(`${JSON.stringify({ type: 'end' })}\r\n`);
  const raw = await done;
  return { frames: jsonLines(raw), raw: raw.toString() };
}

/**
 * sdc-docker's side of a build (lib/backends/sdc/build.js): send the context on one connection,
 * then read the build events on a second, answering each task event with `answer`.
 */
export async function runBuildClient(
  host: string,
  port: number,
  context: Buffer | undefined,
  answer: (event: any) => { result?: unknown; error?: string } | Promise<{ result?: unknown; error?: string }>,
  timeoutMs = 20_000,
  /** Told of every build event as it arrives (a test timing them). */
  onEvent?: (event: any) => void,
): Promise<{ contextReply: any[]; events: any[] }> {
  let contextReply: any[] = [];
  if (context) {
    const cs = await connect(host, port, { allowHalfOpen: true });
    const replied = readUntilClose(cs, timeoutMs);
    cs.end(context);
    contextReply = jsonLines(await replied, '\n');
  }
  const bs = await connect(host, port);
  const events: any[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      bs.destroy();
      reject(new Error(`the build did not end within ${timeoutMs} ms; events: ${JSON.stringify(events).slice(0, 2000)}`));
    }, timeoutMs);
    readline.createInterface({ input: bs }).on('line', (line) => {
      const event = JSON.parse(line);
      events.push(event);
      onEvent?.(event);
      if (['find_cached_image', 'image_reprovision', 'image_create', 'run', 'build_finished', 'commit_finished'].includes(event.type)) {
        void Promise.resolve(answer(event)).then((a) => {
          const response: Record<string, unknown> = { messageId: event.messageId, type: 'callback' };
          if (a.error) response.error = a.error;
          if (a.result !== undefined) response.result = a.result;
          bs.write(`${JSON.stringify(response)}\n`);
        });
      }
    });
    bs.on('error', () => undefined);
    bs.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return { contextReply, events };
}
