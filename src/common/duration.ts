/**
 * Durations as scenario files write them: a number and a unit, "500ms", "30s", "5m", "1h",
 * or a sum of them ("1m30s"). A bare number is refused: "30" could mean seconds or
 * milliseconds, and a scenario that waits 1000 times too long is a bad way to find out.
 */

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/** The longest duration a scenario may use anywhere: a week. */
export const MAX_DURATION_MS = 7 * 24 * 3_600_000;

/** Milliseconds, or a message saying what is wrong with the text. */
export function parseDuration(text: string): { ms: number } | { error: string } {
  const s = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(s)) return { error: `duration ${JSON.stringify(text)} has no unit: write it as "${s}s", "${s}ms", "${s}m" or "${s}h"` };
  if (!WHOLE.test(s)) return { error: `${JSON.stringify(text)} is not a duration: write a number and a unit (ms, s, m, h), e.g. "500ms", "30s", "5m", "1h30m"` };
  let ms = 0;
  for (const m of s.matchAll(PART)) ms += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  ms = Math.round(ms);
  if (ms > MAX_DURATION_MS) return { error: `duration ${JSON.stringify(text)} is longer than a week` };
  return { ms };
}

/** A duration for people: "1h2m", "30s", "1.5s", "250ms". */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))}s`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}` || '0s';
}
