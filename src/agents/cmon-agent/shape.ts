/**
 * Deterministic "personality" for mock metrics: each VM (or CN) gets stable per-metric factors
 * from its uuid, and a slow wobble in time, so graphs look alive without any state but the
 * counters themselves.
 */

/** A stable number in [0, 1) for (id, salt): FNV-1a. */
export function unit(id: string, salt: string): number {
  let h = 0x811c9dc5;
  const s = `${id}\u0000${salt}`;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) / 0x1_0000_0000;
}

/** A factor in [1 - depth, 1 + depth] that drifts with a ~10 minute period, phase-shifted per id. */
export function wobble(id: string, salt: string, nowMs: number, depth = 0.5): number {
  const phase = unit(id, `${salt}/phase`) * 2 * Math.PI;
  const periodMs = 8 * 60_000 + unit(id, `${salt}/period`) * 4 * 60_000;
  return 1 + depth * Math.sin((2 * Math.PI * nowMs) / periodMs + phase);
}

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
