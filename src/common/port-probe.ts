/**
 * Whether a TCP port can be listened on, found by listening on it and closing again at once.
 * The answer holds only for that moment (another process may take the port right after), which
 * is what a start-up check needs: to refuse before anything is written, with a message naming
 * the setting to change, instead of failing half-way through.
 */
import net from 'node:net';

/** undefined when `ip:port` could be listened on; else the listen error (EADDRINUSE, EACCES, ...). */
export function probeListen(ip: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    server.listen({ host: ip, port, exclusive: true }, () => {
      server.close(() => resolve(undefined));
    });
  });
}
