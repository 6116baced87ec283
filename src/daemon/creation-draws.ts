/**
 * Where a server creation draws its random values from (`--seed`): every CN the data dir ever
 * created has an ordinal, and CN number k draws its MACs, uuid and disk names from streams of
 * its own (`mac:k`, `server-uuid:k`, `disks:k` under the seed), so parallel creations and the
 * batching of create-servers change nothing, and a restarted daemon goes on where it stopped
 * (`<data-dir>/draws.json` keeps the next ordinal). A request's mix order is drawn from
 * `mix:<its first ordinal>`. Without a seed every stream is fresh entropy.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileDurable } from '../common/durable-file.js';
import { randomStream, type RandomStream } from '../common/seeded-random.js';

export const DRAWS_FILE = 'draws.json';

export class CreationDraws {
  private next: number | undefined;
  private saving: Promise<void> = Promise.resolve();

  constructor(private readonly dataDir: string) {}

  /** Reserve `n` ordinals (recorded durably before any is used); the first one. */
  async reserve(n: number): Promise<number> {
    if (this.next === undefined) this.next = await this.load();
    const first = this.next;
    this.next += n;
    const value = this.next;
    // One write at a time, each with the latest value: the file never goes backwards.
    this.saving = this.saving.catch(() => undefined).then(() => writeFileDurable(path.join(this.dataDir, DRAWS_FILE), `${JSON.stringify({ next: value })}\n`));
    await this.saving;
    return first;
  }

  private async load(): Promise<number> {
    try {
      const v = JSON.parse(await fsp.readFile(path.join(this.dataDir, DRAWS_FILE), 'utf8')) as { next?: unknown };
      if (typeof v.next === 'number' && Number.isSafeInteger(v.next) && v.next >= 0) return v.next;
    } catch {
      // none yet (a fresh or older data dir): from 0
    }
    return 0;
  }
}

/** The streams of CN number `ordinal` under `seed` (undefined: unpredictable). */
export interface CnStreams {
  mac: RandomStream;
  uuid: RandomStream;
  disks: RandomStream;
}

export function cnStreams(seed: string | undefined, ordinal: number | string): CnStreams {
  return {
    mac: randomStream(seed, `mac:${ordinal}`),
    uuid: randomStream(seed, `server-uuid:${ordinal}`),
    disks: randomStream(seed, `disks:${ordinal}`),
  };
}
