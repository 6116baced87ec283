/**
 * Node's system errors (`EADDRINUSE`, `EACCES`, ...) in words. A message a person reads never
 * shows a bare errno: callers say what they were doing and which flag changes it, and put this
 * description in the middle.
 */

const WORDS: Record<string, string> = {
  EACCES: 'permission denied',
  EADDRINUSE: 'the address is already in use (another process listens there)',
  EADDRNOTAVAIL: 'the address is not one of this host\'s',
  ECONNREFUSED: 'the connection was refused (nothing listens there)',
  ECONNRESET: 'the connection was reset by the peer',
  EEXIST: 'it already exists',
  EHOSTUNREACH: 'the host is unreachable',
  EISDIR: 'it is a directory',
  EMFILE: 'this process has too many open files',
  ENFILE: 'the system has too many open files',
  ENOENT: 'no such file or directory',
  ENOSPC: 'no space left on the device',
  ENOTDIR: 'a part of the path is not a directory',
  ENOTEMPTY: 'the directory is not empty',
  EPERM: 'the operation is not permitted',
  EPIPE: 'the other end closed the connection',
  EROFS: 'the file system is read-only',
  ETIMEDOUT: 'the connection timed out',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved now',
  UND_ERR_SOCKET: 'the connection was closed by the peer',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
};

/** The errno code of a Node system error (or of its cause), if it has one. */
export function systemErrorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$|^UND_ERR_/.test(code)) return code;
  }
  return undefined;
}

/**
 * What went wrong, in words: "permission denied" for an EACCES, the message otherwise. The
 * errno code stays in parentheses for searching, never alone.
 */
export function describeSystemError(err: unknown): string {
  const code = systemErrorCode(err);
  if (code && WORDS[code]) return `${WORDS[code]} (${code})`;
  const message = err instanceof Error ? err.message : String(err);
  return code ? `${message.replace(new RegExp(`^${code}:?\\s*`), '')} (${code})` : message;
}
