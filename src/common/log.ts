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
