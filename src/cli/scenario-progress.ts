/**
 * A scenario run's progress on stderr. On a terminal: one bar (cli-progress, as create-servers
 * shows its own) with the steps done, the time into the run and its length, and what was done
 * last, redrawn in place every second. Elsewhere (a log, CI): one plain line per step, with
 * its time into the run, its step number and its line in the file.
 */
import cliProgress from 'cli-progress';
import { formatDuration } from '../common/duration.js';
import type { RunListener } from '../scenarios/runner.js';
import type { TimelineEntry } from '../scenarios/types.js';

export class ScenarioProgress implements RunListener {
  private readonly stream: NodeJS.WriteStream;
  private readonly tty: boolean;
  private bar: cliProgress.SingleBar | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private startedAt = 0;
  private lengthMs = 0;
  private finished = 0;
  private last = 'starting';

  constructor(
    private readonly name: string,
    stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.stream = stream;
    this.tty = stream.isTTY === true;
  }

  begin(entries: readonly TimelineEntry[], lengthMs: number): void {
    this.startedAt = Date.now();
    this.lengthMs = lengthMs;
    if (!this.tty) {
      this.stream.write(`scenario ${this.name}: ${entries.length} step(s) on the timeline, lasting at least ${formatDuration(lengthMs)}\n`);
      return;
    }
    this.bar = new cliProgress.SingleBar(
      { stream: this.stream, format: `${this.name} {bar} {value}/{total} steps | {elapsed} of {length} | {last}`, hideCursor: true, barsize: 30, fps: 10 },
      cliProgress.Presets.shades_classic,
    );
    this.bar.start(entries.length, 0, this.figures());
    this.ticker = setInterval(() => this.bar?.update(this.finished, this.figures()), 1000);
    this.ticker.unref();
  }

  done(n: number, entry: TimelineEntry, account: string, lateMs: number): void {
    this.finished = n + 1;
    const late = lateMs >= 1000 ? ` (${formatDuration(lateMs)} late: the step before took longer)` : '';
    this.last = `step ${entry.step.index}: ${account}`;
    if (this.bar) {
      this.bar.update(this.finished, this.figures());
      return;
    }
    const rep = entry.step.repeat ? ` [${entry.rep + 1}/${entry.step.repeat.times}]` : '';
    this.stream.write(`[+${formatDuration(Date.now() - this.startedAt)}] step ${entry.step.index}${rep} (line ${entry.step.pos.line}): ${account}${late}\n`);
  }

  draining(ms: number): void {
    this.last = `waiting ${formatDuration(ms)} for the last events to end`;
    if (this.bar) this.bar.update(this.finished, this.figures());
    else this.stream.write(`${this.last}\n`);
  }

  /** A line of its own (a warning) that must not land inside the bar. */
  note(line: string): void {
    if (this.bar) {
      this.stream.write(`\r\x1b[2K${line}\n`);
      this.bar.update(this.finished, this.figures());
    } else {
      this.stream.write(`${line}\n`);
    }
  }

  /** The end of the run, whatever ended it: the bar's last state stays on screen, then `line`. */
  end(line: string): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
    if (this.bar) {
      this.bar.update(this.finished, this.figures());
      this.bar.stop();
      this.bar = undefined;
    }
    this.stream.write(`${line}\n`);
  }

  private figures(): Record<string, string> {
    return { elapsed: formatDuration(Date.now() - this.startedAt), length: formatDuration(this.lengthMs), last: this.last };
  }
}
