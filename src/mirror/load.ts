/**
 * `mockcloud mirror load CAPTURE`: a capture (format.ts) into a running daemon and its
 * headnode (the embedded dev headnode or a real test Triton), record by record as the file is
 * read:
 *
 *   nic_tag       NAPI POST /nic_tags, unless NAPI has the name;
 *   network       NAPI POST /networks with the captured uuid, unless NAPI has it; the captured
 *                 admin network is the loading DC's own admin network; a name NAPI already
 *                 gives another network gets `-<first 8 of the uuid>`; fabrics are not made;
 *   network_pool  NAPI POST /network_pools, likewise;
 *   image         IMGAPI AdminImportImage, a placeholder file (an empty gzip) and activation,
 *                 unless IMGAPI has the uuid; an image whose origin comes later waits for it;
 *   package       PAPI POST /packages (`skip_validation`: as captured, even what a DC's
 *                 first boot stored unchecked) unless PAPI has the uuid; the daemon's dev
 *                 headnode's PAPI unless another is given;
 *   server        the daemon's control API POST /servers {count: 1, uuid, hostname, hardware},
 *                 unless the daemon has the uuid (GET /servers/:uuid); the daemon stages the
 *                 CN's dir and publishes it whole (src/mockcn/server-dir.ts): never half a CN;
 *   vm            its NICs from NAPI first, as VMAPI's provision makes them (the captured MAC
 *                 and IP on the loaded network; another IP when that one is taken), then
 *                 cn-agent's machine_create on the CN, as CNAPI sends it: vm-agent and
 *                 net-agent then report the VM to VMAPI and NAPI as any other. A VM the CN has
 *                 already is left alone ("Machine <uuid> exists.");
 *   nic           counted: VM NICs come with their VMs, the CNs' own with the CNs.
 *
 * Everything is checked by uuid (or name) before it is made, so a second load changes nothing,
 * and a load interrupted anywhere (Ctrl-C, kill -9, the daemon killed) is finished by running
 * it again. `--remap-uuids` gives servers, VMs and VM NIC MACs new identities derived from the
 * old ones and a seed, so the same capture loads the same way again.
 *
 * This file reads the capture and runs the phases, one kind at a time, a few records at once:
 * load-networks.ts (NAPI), load-images.ts (IMGAPI, PAPI), load-servers.ts (the daemon),
 * load-vms.ts (cn-agent, NAPI); what they share is load-run.ts, what they tell load-report.ts.
 */
import { readCapture, RECORD_KIND_NAMES, RECORD_KINDS, verifyCapture, type Obj, type RecordKind } from './format.js';
import { ImagePhase, loadPackage } from './load-images.js';
import { loadNetwork, loadNetworkPool, loadNicTag } from './load-networks.js';
import type { LoadReport, Outcome } from './load-report.js';
import { LoadRun, Refused, type LoadOptions } from './load-run.js';
import { loadServer } from './load-servers.js';
import { checkNic, loadVm } from './load-vms.js';

export async function load(opts: LoadOptions): Promise<LoadReport> {
  return new Loader(opts).run();
}

class Loader {
  private readonly r: LoadRun;
  private readonly images: ImagePhase;

  constructor(opts: LoadOptions) {
    this.r = new LoadRun(opts);
    this.images = new ImagePhase(this.r);
  }

  async run(): Promise<LoadReport> {
    const started = Date.now();
    // A file cut short or damaged is refused before anything is made.
    const header = await verifyCapture(this.r.o.file, this.r.o.limits);
    let pool = new Pool(1);
    let kind: RecordKind | undefined;
    const done = Object.fromEntries(RECORD_KINDS.map((k) => [k, 0])) as Record<RecordKind, number>;
    const seconds: LoadReport['seconds'] = {};
    let kindStarted = 0;
    const endKind = async (): Promise<void> => {
      await pool.drain();
      if (kind === 'image') await this.images.flush();
      if (kind) seconds[kind] = Math.round(performance.now() - kindStarted) / 1000;
    };
    for await (const item of readCapture(this.r.o.file, this.r.o.limits)) {
      if (item.kind === 'header') continue;
      this.r.checkAborted();
      if (item.kind !== kind) {
        // One kind at a time: everything of the kind before is done (VMs need their CN).
        await endKind();
        kind = item.kind;
        kindStarted = performance.now();
        pool = new Pool(kind === 'server' ? (this.r.o.serverConcurrency ?? 16) : kind === 'vm' ? (this.r.o.vmConcurrency ?? 64) : 8);
      }
      const k = item.kind;
      const data = item.data;
      await pool.run(async () => {
        const outcome = await this.one(k, data).catch((err: unknown) => {
          const id = String(data.uuid ?? data.name ?? data.mac ?? '?');
          // The loading DC said no to what it was asked (a 4xx): a re-run would not change
          // that; it is something the DC cannot reproduce, not a failure.
          if (err instanceof Refused) {
            this.r.note(`${RECORD_KIND_NAMES[k]} the loading DC refused`, `${id}: ${err.message}`);
            return 'skipped' as const;
          }
          this.r.fail(k, id, err);
          return 'failed' as const;
        });
        if (outcome) this.r.tally.counts[k][outcome]++;
        done[k]++;
        this.r.o.onProgress?.({ kind: k, done: done[k], total: header.counts[k] });
      });
    }
    await endKind();
    return this.r.tally.report(header, seconds, Date.now() - started);
  }

  private one(kind: RecordKind, data: Obj): Promise<Outcome | undefined> {
    switch (kind) {
      case 'nic_tag':
        return loadNicTag(this.r, data);
      case 'network':
        return loadNetwork(this.r, data);
      case 'network_pool':
        return loadNetworkPool(this.r, data);
      case 'image':
        return this.images.image(data);
      case 'package':
        return loadPackage(this.r, data);
      case 'server':
        return loadServer(this.r, data);
      case 'vm':
        return loadVm(this.r, data);
      case 'nic':
        return checkNic(this.r, data);
    }
  }
}

/** At most `limit` jobs at once; `run` waits for a free slot, so a reader is held back. */
class Pool {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly limit: number) {}

  async run(fn: () => Promise<void>): Promise<void> {
    while (this.running.size >= this.limit) await Promise.race(this.running);
    const p = fn().finally(() => this.running.delete(p));
    this.running.add(p);
  }

  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.race(this.running);
  }
}
