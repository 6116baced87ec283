/**
 * The last line of defence of every command: an error nobody caught (thrown in a stream's
 * callback, a promise nobody awaited) ends the command with one line on stderr, never Node's
 * raw stack. The daemon first puts the whole error, stack and all, in its log (setFatalLog),
 * where an operator reads it; the terminal gets the line and where to look.
 */
import { appendFileSync } from 'node:fs';
import os from 'node:os';

let fatalLog: { file: string | undefined; write(err: unknown): void } | undefined;

/** The daemon's log: where an uncaught error's stack goes (a file, or stderr as bunyan JSON). */
export function setFatalLog(logFile: string | undefined): void {
  fatalLog = {
    file: logFile,
    write: (err) => {
      const e = err instanceof Error ? err : new Error(String(err));
      // A bunyan record, written at once: the process ends right after.
      const record = {
        name: 'mockcloud',
        hostname: os.hostname(),
        pid: process.pid,
        level: 60,
        err: { message: e.message, name: e.name, stack: e.stack },
        msg: `uncaught error, the daemon stops: ${e.message}`,
        time: new Date().toISOString(),
        v: 0,
      };
      const line = `${JSON.stringify(record)}\n`;
      if (logFile) appendFileSync(logFile, line);
      else process.stderr.write(line);
    },
  };
}

export function installFatalHandlers(describe: (err: unknown) => string): void {
  let ending = false;
  const fatal = (err: unknown): void => {
    if (ending) return;
    ending = true;
    try {
      fatalLog?.write(err);
    } catch {
      // the log is gone too: the line below is all there is
    }
    const where = fatalLog?.file ? `; the details are in ${fatalLog.file}` : '';
    const message = describe(err).split('\n')[0]!.slice(0, 500);
    process.stderr.write(`mockcloud: internal error: ${message}${where}\n`);
    process.exit(70); // EX_SOFTWARE
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
}
