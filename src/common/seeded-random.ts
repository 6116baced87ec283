/**
 * Random numbers a run can replay: one stream per purpose, derived from a seed, so that two
 * runs given the same seed and the same commands draw the same values (`--seed`). Without a
 * seed the streams come from the OS's entropy and behave as Math.random would.
 *
 * A stream is sfc32 (Chris Doty-Humphrey's Small Fast Counter, as in PractRand): 128 bits of
 * state, good enough statistics for picking servers, MACs and fault outcomes, and cheap.
 * A purpose string keeps streams independent: the MACs drawn do not shift when a scenario
 * also draws event targets.
 */
import { createHash, randomBytes } from 'node:crypto';

export interface RandomStream {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** A copy of the list in a random order (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[];
  /** `n` random bytes. */
  bytes(n: number): Buffer;
  /** A version 4 UUID drawn from this stream. */
  uuid(): string;
}

class Sfc32 implements RandomStream {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: Buffer) {
    this.a = seed.readUInt32LE(0);
    this.b = seed.readUInt32LE(4);
    this.c = seed.readUInt32LE(8);
    this.d = seed.readUInt32LE(12) | 1;
    // Mix the state before the first draw (as the reference implementation does).
    for (let i = 0; i < 12; i++) this.u32();
  }

  private u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.u32() / 4294967296;
  }

  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`int(${n}): n must be a positive integer`);
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(items.length)]!;
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i += 4) {
      const v = this.u32();
      for (let k = 0; k < 4 && i + k < n; k++) out[i + k] = (v >>> (8 * k)) & 0xff;
    }
    return out;
  }

  uuid(): string {
    const b = this.bytes(16);
    b[6] = (b[6]! & 0x0f) | 0x40;
    b[8] = (b[8]! & 0x3f) | 0x80;
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

/**
 * The stream for `purpose` under `seed` (any string: "42", "nightly-2026-11-24"); a fresh
 * unpredictable stream when `seed` is undefined.
 */
export function randomStream(seed: string | undefined, purpose: string): RandomStream {
  const material = seed === undefined ? randomBytes(16) : createHash('sha256').update(`${seed}\0${purpose}`).digest();
  return new Sfc32(material);
}
