/**
 * Progress of long work (create-servers, ensure-servers, delete-servers, add-externals) on
 * stderr. On a terminal: a bar with the count, the rate and the ETA (cli-progress), redrawn in
 * place. Elsewhere (a log, CI, the nightly hook): plain lines, at most one a second plus the
 * last, each with the same figures, so a long run stays readable.
 */
import cliProgress from 'cli-progress';

export interface ProgressOptions {
  /** The stream (stderr by default); a TTY gets the bar. */
  stream?: NodeJS.WriteStream;
  /** Plain lines at most this often (ms; default 1000). */
  plainIntervalMs?: number;
}

export class Progress {
  private readonly stream: NodeJS.WriteStream;
  private readonly tty: boolean;
  private readonly plainIntervalMs: number;
  private bar: cliProgress.SingleBar | undefined;
  private verb = '';
  private unit = 'servers';
  private total = 0;
  private value = 0;
  private failed = 0;
  private startedAt = 0;
  private lastLine = 0;
  private pendingLine = false;

  constructor(opts: ProgressOptions = {}) {
    this.stream = opts.stream ?? process.stderr;
    this.tty = this.stream.isTTY === true;
    this.plainIntervalMs = opts.plainIntervalMs ?? 1000;
  }

  /** Begin: `verb` says what is counted ("created", "deleted"), `total` how many there are to do, of what `unit`. */
  start(verb: string, total: number, unit = 'servers'): void {
    this.stop();
    this.verb = verb;
    this.unit = unit;
    this.total = total;
    this.value = 0;
    this.failed = 0;
    this.startedAt = Date.now();
    this.lastLine = 0;
    if (!this.tty) return;
    this.bar = new cliProgress.SingleBar(
      {
        stream: this.stream,
        format: `${verb} {bar} {value}/{total} ${unit} | {rate}/s | ETA {eta_formatted}{failedText}`,
        hideCursor: true,
        barsize: 30,
        etaBuffer: 50,
        fps: 10,
      },
      cliProgress.Presets.shades_classic,
    );
    this.bar.start(total, 0, { rate: '0', failedText: '' });
  }

  /** `done` finished so far (absolute), `failed` of them failed; `total` when it has grown (a count known only as it goes). */
  update(done: number, failed = 0, total?: number): void {
    this.value = done;
    this.failed = failed;
    if (total !== undefined && total !== this.total) {
      this.total = total;
      this.bar?.setTotal(total);
    }
    if (this.bar) {
      this.bar.update(done, { rate: this.rate().toFixed(0), failedText: failed ? ` | ${failed} failed` : '' });
      return;
    }
    if (!this.verb) return;
    this.pendingLine = true;
    if (Date.now() - this.lastLine >= this.plainIntervalMs) this.writeLine();
  }

  /** The end: the bar's last state stays on screen; a plain run gets its final line. */
  stop(): void {
    if (this.bar) {
      this.bar.stop();
      this.bar = undefined;
    } else if (this.verb && this.pendingLine) {
      this.writeLine();
    }
    this.verb = '';
  }

  /** Per second since start. */
  private rate(): number {
    const s = (Date.now() - this.startedAt) / 1000;
    return s > 0 ? this.value / s : 0;
  }

  private writeLine(): void {
    const rate = this.rate();
    const left = this.total - this.value;
    const eta = left > 0 && rate > 0 ? `, ETA ${Math.ceil(left / rate)}s` : '';
    const failed = this.failed ? `, ${this.failed} failed` : '';
    this.stream.write(`${this.verb} ${this.value}/${this.total} ${this.unit}${failed} (${rate.toFixed(0)}/s${eta})\n`);
    this.lastLine = Date.now();
    this.pendingLine = false;
  }
}
