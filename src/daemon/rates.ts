/**
 * Per-second rates of monotonically growing counters (heartbeats, status reports), over the
 * last minute: one shared sampling job, not a timer per counter.
 */
export class RateWindow {
  private readonly samples: { at: number; values: Record<string, number> }[] = [];

  constructor(
    private readonly read: () => Record<string, number>,
    private readonly windowMs = 60_000,
  ) {}

  /** Take a sample now (call every few seconds). */
  sample(now = Date.now()): void {
    this.samples.push({ at: now, values: this.read() });
    while (this.samples.length > 2 && now - this.samples[1]!.at >= this.windowMs) this.samples.shift();
  }

  /** Rates per second between the oldest sample in the window and now. */
  rates(now = Date.now()): Record<string, number> {
    const current = this.read();
    const oldest = this.samples[0];
    const out: Record<string, number> = {};
    for (const key of Object.keys(current)) {
      if (!oldest || now - oldest.at <= 0) {
        out[key] = 0;
        continue;
      }
      const delta = current[key]! - (oldest.values[key] ?? 0);
      out[key] = Math.round((delta / ((now - oldest.at) / 1000)) * 100) / 100;
    }
    return out;
  }
}
