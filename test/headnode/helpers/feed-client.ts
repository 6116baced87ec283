/**
 * A changefeed listener's websocket for tests (node-sdc-changefeed's listener protocol):
 * text frames queue up for `next()`.
 */
import WebSocket from 'ws';

/** A websocket whose text frames queue up for `next()`. */
export class FeedClient {
  readonly ws: WebSocket;
  private readonly queue: string[] = [];
  private waiters: ((text: string) => void)[] = [];
  closed: { code: number; reason: string } | undefined;
  private closeWaiters: (() => void)[] = [];

  constructor(url: string, version?: string) {
    this.ws = new WebSocket(`${url.replace(/^http/, 'ws')}/changefeeds`, {
      headers: version ? { 'accept-version': version } : {},
    });
    this.ws.on('message', (data) => {
      const text = data.toString();
      const w = this.waiters.shift();
      if (w) w(text);
      else this.queue.push(text);
    });
    this.ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const w of this.closeWaiters) w();
    });
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
  }

  send(obj: unknown): void {
    this.ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj));
  }

  async next(timeoutMs = 5000): Promise<any> {
    const queued = this.queue.shift();
    if (queued !== undefined) return JSON.parse(queued);
    const text = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no changefeed message arrived')), timeoutMs);
      this.waiters.push((s) => {
        clearTimeout(t);
        resolve(s);
      });
    });
    return JSON.parse(text);
  }

  whenClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('socket stayed open')), timeoutMs);
      this.closeWaiters.push(() => {
        clearTimeout(t);
        resolve(this.closed!);
      });
    });
  }

  close(): void {
    this.ws.terminate();
  }
}

