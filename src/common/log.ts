import bunyan from 'bunyan';

export type Logger = bunyan;

export interface LoggerOptions {
  name: string;
  level?: bunyan.LogLevel;
  /** A file path; stderr when absent. */
  path?: string;
}

/**
 * All logs are bunyan JSON, so Triton's `bunyan` CLI reads them. The level comes from
 * MOCKCLOUD_LOG_LEVEL when the caller does not choose one.
 */
export function createLogger(opts: LoggerOptions): Logger {
  const level = opts.level ?? (process.env.MOCKCLOUD_LOG_LEVEL as bunyan.LogLevel | undefined) ?? 'info';
  const stream: bunyan.Stream = opts.path
    ? { level, path: opts.path }
    : { level, stream: process.stderr };
  return bunyan.createLogger({ name: opts.name, streams: [stream], serializers: bunyan.stdSerializers });
}

/** A logger that drops everything: for tests and benchmarks that measure, not read. */
export function createQuietLogger(name = 'mockcloud'): Logger {
  return bunyan.createLogger({ name, level: bunyan.FATAL + 1 });
}

/**
 * Whether a failure is one the code expects and handles: a coded error of the catalogue
 * (src/common/errors.ts), a peer's HTTP status, or a system error (EADDRINUSE, ECONNRESET,
 * ENOSPC, ...). Anything else (a TypeError, an assertion) is a bug.
 */
export function isExpectedFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code !== '') return true;
  return typeof (err as { statusCode?: unknown }).statusCode === 'number';
}

/**
 * A failure's fields for a log record. An expected one is its code and message, no stack: the
 * stack says nothing an operator can use, and a handled condition is a WARN an operator can
 * grep, not a trace. A bug keeps its stack (bunyan's `err`), for whoever fixes it.
 */
export function failureFields(err: unknown): Record<string, unknown> {
  if (!isExpectedFailure(err)) return { err };
  const e = err as Error & { code?: unknown; statusCode?: unknown };
  return {
    error: e.message,
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.statusCode === 'number' ? { statusCode: e.statusCode } : {}),
  };
}

/**
 * Log a failure the code has dealt with (answered, retried, skipped): an expected one as a WARN
 * with its code and message, a bug as an ERROR with its stack.
 */
export function logFailure(log: Logger, err: unknown, fields: Record<string, unknown>, msg: string): void {
  if (isExpectedFailure(err)) log.warn({ ...fields, ...failureFields(err) }, msg);
  else log.error({ ...fields, err }, msg);
}
