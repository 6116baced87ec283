/**
 * What `mirror load` says when it is done: per kind of record how many were created, were
 * there already, failed or were skipped on purpose; what the loading DC could not reproduce as
 * captured (one line per kind of loss, with a count and a few examples); the first failures of
 * each kind; and how long each kind took. The load's phases tally into one `LoadTally`; the CLI
 * prints the report it makes.
 */
import { RECORD_KINDS, type CaptureHeader, type RecordKind } from './format.js';

export type Outcome = 'created' | 'existing' | 'failed' | 'skipped';

export interface LoadReport {
  header: CaptureHeader;
  /** Per kind: how many were created, were there already, failed, were skipped on purpose. */
  counts: Record<RecordKind, Record<Outcome, number>>;
  /** What could not be reproduced as captured: one line per kind of loss, with a count and examples. */
  notReproduced: { what: string; count: number; examples: string[] }[];
  /** Seconds each kind took, from its first record to its last one done (the rates of a load). */
  seconds: Partial<Record<RecordKind, number>>;
  /** Failures, the first few of each kind. */
  errors: { kind: RecordKind; id: string; message: string }[];
  durationMs: number;
}

const MAX_EXAMPLES = 3;
const MAX_ERRORS_PER_KIND = 20;

/** The counts, losses and failures of one load, as its phases go. */
export class LoadTally {
  readonly counts = Object.fromEntries(RECORD_KINDS.map((k) => [k, { created: 0, existing: 0, failed: 0, skipped: 0 }])) as LoadReport['counts'];
  private readonly lost = new Map<string, { count: number; examples: string[] }>();
  readonly errors: LoadReport['errors'] = [];

  /** Something not reproduced as captured (`what`), with an example of it. */
  note(what: string, example?: string): void {
    const v = this.lost.get(what) ?? { count: 0, examples: [] };
    v.count++;
    if (example !== undefined && v.examples.length < MAX_EXAMPLES) v.examples.push(example);
    this.lost.set(what, v);
  }

  fail(kind: RecordKind, id: string, err: unknown): void {
    if (this.errors.filter((e) => e.kind === kind).length < MAX_ERRORS_PER_KIND) {
      this.errors.push({ kind, id, message: (err as Error)?.message ?? String(err) });
    }
  }

  report(header: CaptureHeader, seconds: LoadReport['seconds'], durationMs: number): LoadReport {
    return {
      header,
      counts: this.counts,
      notReproduced: [...this.lost.entries()].map(([what, v]) => ({ what, count: v.count, examples: v.examples })),
      seconds,
      errors: this.errors,
      durationMs,
    };
  }
}
