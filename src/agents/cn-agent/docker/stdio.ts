/**
 * The framing of docker_exec's stream, both ways (sdc-cn-agent lib/backends/smartos/lib/
 * docker-stdio.js, read by sdc-docker lib/backends/sdc/containers.js):
 *
 * - to the client, one JSON object and `\r\n` per chunk: `{"type":"stdout"|"stderr"|"tty",
 *   "data":"..."}`, then `{"type":"end","data":{"code":N,"signal":null}}` when the command
 *   has exited, then the socket ends;
 * - from the client, the same framing: `{"type":"stdin","data"}`, `{"type":"tty","data"}`,
 *   `{"type":"tty","resize":{"h","w"}}`, and `{"type":"end"}` for a closed stdin.
 */
import type net from 'node:net';

export type StreamType = 'stdout' | 'stderr' | 'tty';

export function writeData(socket: net.Socket, type: StreamType, chunk: string): void {
  if (socket.destroyed || !socket.writable) return;
  socket.write(`${JSON.stringify({ type, data: chunk })}\r\n`);
}

export function writeEnd(socket: net.Socket, result: { code: number | null; signal: string | null }): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed || !socket.writable) {
      resolve();
      return;
    }
    socket.write(`${JSON.stringify({ type: 'end', data: result })}\r\n`, () => resolve());
  });
}

/** `tryEnd`: end the socket unless it is already gone. */
export function tryEnd(socket: net.Socket): void {
  if (!socket.destroyed) socket.end();
}

export type ClientMessage =
  | { type: 'stdin' | 'tty'; data: string }
  | { type: 'resize'; h: number; w: number }
  | { type: 'end' }
  | { type: 'unknown'; value: unknown };

/** Split the client's `\r\n`-separated JSON lines; bad JSON lines are skipped (and reported). */
export function clientMessages(socket: net.Socket, onMessage: (m: ClientMessage) => void, onBadLine: (line: string) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    // A client that sends no line end cannot make us hold more than this.
    if (buffered.length > 1024 * 1024 && !buffered.includes('\n')) {
      onBadLine(buffered.slice(0, 200));
      buffered = '';
      return;
    }
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        onBadLine(line);
        continue;
      }
      onMessage(toMessage(parsed));
    }
  });
}

function toMessage(v: unknown): ClientMessage {
  const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  if (o.type === 'end') return { type: 'end' };
  if (o.type === 'tty' && o.resize && typeof o.resize === 'object') {
    const r = o.resize as { h?: unknown; w?: unknown };
    return { type: 'resize', h: Number(r.h), w: Number(r.w) };
  }
  if ((o.type === 'stdin' || o.type === 'tty') && typeof o.data === 'string') return { type: o.type, data: o.data };
  return { type: 'unknown', value: v };
}
