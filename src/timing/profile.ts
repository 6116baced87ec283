/**
 * A timing profile: a name and the figure of every key (catalogue.ts). Built-in profiles are
 * in builtin.ts; timing files (file.ts) extend one and override what they write.
 */
import { allKeys } from './catalogue.js';
import { isZero, ZERO, type Figure } from './figure.js';

export interface TimingProfile {
  readonly name: string;
  readonly description: string;
  /** Every key of the catalogue has its figure (ZERO where nothing takes time). */
  readonly figures: ReadonlyMap<string, Figure>;
  /** 'built-in', or the file it was read from. */
  readonly source: string;
  /** True when every figure is zero but the CN's boot: nothing waits (today's mock). */
  readonly instant: boolean;
}

/** A profile from figures given by key; every key left out is zero. */
export function makeProfile(
  name: string,
  description: string,
  source: string,
  given: ReadonlyMap<string, Figure> | Readonly<Record<string, Figure>>,
): TimingProfile {
  const entries = given instanceof Map ? [...given] : Object.entries(given);
  const figures = new Map<string, Figure>();
  for (const key of allKeys()) figures.set(key, ZERO);
  for (const [key, figure] of entries) figures.set(key, figure);
  const instant = [...figures].every(([key, f]) => key === 'cn.boot' || isZero(f));
  return { name, description, source, figures, instant };
}

/** The figure of `key` in `profile` (zero for a key it does not hold). */
export function figureOf(profile: TimingProfile, key: string): Figure {
  return profile.figures.get(key) ?? ZERO;
}
