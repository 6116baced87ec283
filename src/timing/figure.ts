/**
 * One timing figure: how long something takes, as a distribution of durations, optionally
 * plus the time to move its bytes at a rate, optionally other figures for some brands.
 *
 *   fixed       always the same
 *   uniform     anywhere from min to max, evenly
 *   log-normal  given by its median (p50) and 99th percentile (p99): most draws near the
 *               median, a long tail towards and past the p99, as service times are
 *
 * Durations are milliseconds here; files write them as durations ("250ms", "4s").
 */

export type Spread =
  | { kind: 'fixed'; ms: number }
  | { kind: 'uniform'; minMs: number; maxMs: number }
  | { kind: 'lognormal'; p50Ms: number; p99Ms: number };

export interface Figure {
  spread: Spread;
  /** Bytes per second: a phase that moves N bytes takes N / rate seconds more. */
  rateBytesPerSecond?: number;
  /** Another figure for VMs of these brands (bhyve boots slower than a zone). */
  brands?: Readonly<Record<string, Figure>>;
}

/** What a draw depends on: the VM's brand, the bytes the phase moves. */
export interface DrawContext {
  brand?: string | undefined;
  bytes?: number | undefined;
}

/** z of the 99th percentile of the standard normal distribution. */
const Z99 = 2.3263478740408408;
/**
 * A log-normal draw is cut at this many standard deviations: 1 in 30,000 draws would go past
 * it, and a tail without end would now and then stall a test for hours.
 */
const MAX_Z = 4;

export const fixed = (ms: number): Figure => ({ spread: { kind: 'fixed', ms } });
export const uniform = (minMs: number, maxMs: number): Figure => ({ spread: { kind: 'uniform', minMs, maxMs } });
export const logNormal = (p50Ms: number, p99Ms: number): Figure => ({ spread: { kind: 'lognormal', p50Ms, p99Ms } });
export const ZERO: Figure = fixed(0);

/** The figure that applies to this brand. */
export function forBrand(figure: Figure, brand: string | undefined): Figure {
  return (brand !== undefined && figure.brands?.[brand]) || figure;
}

/**
 * One duration in ms, from uniform numbers in [0, 1) (`next`): the spread's draw, plus the
 * bytes at the rate. Takes exactly two numbers from `next` whatever the figure, so the
 * draws that follow do not shift when a figure changes kind.
 */
export function drawMs(figure: Figure, next: () => number, ctx: DrawContext = {}): number {
  const f = forBrand(figure, ctx.brand);
  const u1 = next();
  const u2 = next();
  let ms: number;
  const s = f.spread;
  switch (s.kind) {
    case 'fixed':
      ms = s.ms;
      break;
    case 'uniform':
      ms = s.minMs + (s.maxMs - s.minMs) * u1;
      break;
    case 'lognormal': {
      if (s.p50Ms <= 0) {
        ms = 0;
        break;
      }
      // Box-Muller: one standard normal draw from two uniform ones.
      const z = Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
      const sigma = Math.log(Math.max(s.p99Ms, s.p50Ms) / s.p50Ms) / Z99;
      ms = s.p50Ms * Math.exp(sigma * Math.max(-MAX_Z, Math.min(MAX_Z, z)));
      break;
    }
  }
  if (f.rateBytesPerSecond !== undefined && ctx.bytes !== undefined && ctx.bytes > 0) {
    ms += (ctx.bytes / f.rateBytesPerSecond) * 1000;
  }
  return ms;
}

/** The figure's median, for summaries (the mid-point of a uniform one). */
export function medianMs(figure: Figure): number {
  const s = figure.spread;
  return s.kind === 'fixed' ? s.ms : s.kind === 'uniform' ? (s.minMs + s.maxMs) / 2 : s.p50Ms;
}

/** Every duration of the figure multiplied by `factor` (rates divided by it). */
export function scaled(figure: Figure, factor: number): Figure {
  if (factor === 1) return figure;
  const s = figure.spread;
  const spread: Spread =
    s.kind === 'fixed'
      ? { kind: 'fixed', ms: s.ms * factor }
      : s.kind === 'uniform'
        ? { kind: 'uniform', minMs: s.minMs * factor, maxMs: s.maxMs * factor }
        : { kind: 'lognormal', p50Ms: s.p50Ms * factor, p99Ms: s.p99Ms * factor };
  const out: Figure = { spread };
  if (figure.rateBytesPerSecond !== undefined) out.rateBytesPerSecond = figure.rateBytesPerSecond / factor;
  if (figure.brands) {
    const brands: Record<string, Figure> = {};
    for (const [b, f] of Object.entries(figure.brands)) brands[b] = scaled(f, factor);
    out.brands = brands;
  }
  return out;
}

/** True when every draw of the figure is 0 ms (what `instant` is made of). */
export function isZero(figure: Figure): boolean {
  const s = figure.spread;
  const zero = s.kind === 'fixed' ? s.ms === 0 : s.kind === 'uniform' ? s.maxMs === 0 : s.p50Ms === 0;
  return zero && figure.rateBytesPerSecond === undefined && Object.values(figure.brands ?? {}).every(isZero);
}
