/**
 * `mirror load`'s IMGAPI and PAPI phases. An image is imported (AdminImportImage) unless IMGAPI
 * has its uuid, given a placeholder file (an empty gzip) and activated; one whose origin comes
 * later in the capture waits until every image was read; one an earlier, interrupted load
 * imported is finished if it is that image (its owner, name and version). A package is made
 * where a PAPI URL is given (the dev headnode has none).
 */
import zlib from 'node:zlib';
import type { Obj } from './format.js';
import type { Outcome } from './load-report.js';
import { httpError, type LoadRun } from './load-run.js';

const EMPTY_GZIP = zlib.gzipSync(Buffer.alloc(0));

export class ImagePhase {
  /** Images whose origin was not there yet: tried again once every image was read. */
  private readonly pending: Obj[] = [];

  constructor(private readonly run: LoadRun) {}

  async image(m: Obj): Promise<Outcome | undefined> {
    const imgapi = this.run.o.urls.imgapi;
    if (!imgapi) {
      this.run.note('images (no IMGAPI in the loading DC)');
      return 'skipped';
    }
    const found = await this.run.exists(`${imgapi}/images/${String(m.uuid)}`);
    // Imported by an earlier load that was cut off before its file and activation: finished here,
    // if it is that image (its owner, name and version); an upload of someone else's is left alone.
    const unfinished = found?.state === 'unactivated' && String(m.state ?? 'active') !== 'unactivated';
    if (unfinished && (found.owner !== m.owner || found.name !== m.name || found.version !== m.version)) {
      this.run.note("images whose uuid the loading DC gives another, unactivated image (left alone)", String(m.uuid));
      return 'skipped';
    }
    if (found && !unfinished) return 'existing';
    if (!found && typeof m.origin === 'string' && !(await this.run.exists(`${imgapi}/images/${m.origin}`))) {
      // Its origin may come later in the capture: tried again once every image was read.
      this.pending.push(m);
      return undefined;
    }
    await this.importImage(m, found !== undefined);
    return found ? 'existing' : 'created';
  }

  async flush(): Promise<void> {
    for (let round = 0; round < 8 && this.pending.length > 0; round++) {
      const waiting = this.pending.splice(0);
      for (const m of waiting) {
        const outcome = await this.image(m).catch((err: unknown) => {
          this.run.fail('image', String(m.uuid), err);
          return 'failed' as const;
        });
        if (outcome) this.run.tally.counts.image[outcome]++;
      }
    }
    for (const m of this.pending.splice(0)) {
      this.run.note('images whose origin image is in neither the capture nor IMGAPI', String(m.uuid));
      this.run.tally.counts.image.skipped++;
    }
  }

  /** Import (unless `imported` by an earlier, interrupted load), then the file and the state. */
  private async importImage(m: Obj, imported: boolean): Promise<void> {
    const imgapi = this.run.o.urls.imgapi!;
    const uuid = String(m.uuid);
    const manifest: Obj = { ...m };
    for (const k of ['files', 'state', 'published_at', 'channels']) delete manifest[k];
    if (!imported) await this.run.ok('POST', `${imgapi}/images/${uuid}?action=import`, manifest);
    const state = String(m.state ?? 'active');
    if (state === 'unactivated') return;
    const file = await this.run.call('PUT', `${imgapi}/images/${uuid}/file?compression=gzip`, EMPTY_GZIP);
    if (file.statusCode >= 300 && (file.body as Obj | undefined)?.code !== 'ImageFilesImmutable') throw httpError('PUT', `${imgapi}/images/${uuid}/file`, file);
    await this.run.ok('POST', `${imgapi}/images/${uuid}?action=activate`);
    this.run.note('image files (placeholders: an empty gzip file each)');
    if (state === 'disabled') await this.run.ok('POST', `${imgapi}/images/${uuid}?action=disable`).catch(() => this.run.note('disabled images (loaded active)', uuid));
  }
}

export async function loadPackage(run: LoadRun, p: Obj): Promise<Outcome> {
  const papi = run.o.urls.papi;
  if (!papi) {
    run.note('packages (no PAPI in the loading DC: give --papi-url)');
    return 'skipped';
  }
  if (await run.exists(`${papi}/packages/${String(p.uuid)}`)) return 'existing';
  const body: Obj = { ...p, skip_validation: true };
  delete body.created_at;
  delete body.updated_at;
  await run.ok('POST', `${papi}/packages`, body);
  return 'created';
}
