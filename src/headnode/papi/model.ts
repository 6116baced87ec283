/**
 * The dev PAPI's packages: the `sdc_packages` bucket as Moray holds it (each package in its
 * stored form, schema.ts, with Moray's `_id` in insertion order), what PAPI's backend does to
 * it (sdc-papi lib/backend.js: create only when absent, put, delete; the bucket's pre-trigger
 * stamps `created_at` once and `updated_at` on every write), and its persisted snapshot.
 */
import { findObjects, type FindOptions, type FindResult } from './moray-query.js';
import { decodePackage, encodePackage, PACKAGE_INDEXES, PACKAGES_BUCKET, type Pkg } from './schema.js';

export interface PapiSnapshot {
  v: 1;
  nextId: number;
  packages: Pkg[];
}

export class PapiState {
  /** Stored form, by uuid. */
  private readonly records = new Map<string, Pkg>();
  private nextId = 1;

  get size(): number {
    return this.records.size;
  }

  has(uuid: string): boolean {
    return this.records.has(uuid);
  }

  /** The package as PAPI answers it, or undefined. */
  get(uuid: string): Pkg | undefined {
    const r = this.records.get(uuid);
    return r ? this.present(r) : undefined;
  }

  /** createPkg: false when the uuid is taken. */
  create(uuid: string, pkg: Pkg, now = Date.now()): boolean {
    if (this.records.has(uuid)) return false;
    const stored = encodePackage(pkg);
    stored.created_at ||= now;
    stored.updated_at = now;
    this.records.set(uuid, { ...stored, _id: this.nextId++ });
    return true;
  }

  /** updatePkg: the whole package replaced (its Moray `_id` kept). */
  put(uuid: string, pkg: Pkg, now = Date.now()): void {
    const old = this.records.get(uuid);
    const stored = encodePackage(pkg);
    stored.created_at ||= now;
    stored.updated_at = now;
    this.records.set(uuid, { ...stored, _id: old?._id ?? this.nextId++ });
  }

  delete(uuid: string): boolean {
    return this.records.delete(uuid);
  }

  /** findObjects on the bucket; the packages come back as PAPI answers them. */
  find(filter: string, opts: FindOptions): FindResult {
    const found = findObjects(PACKAGES_BUCKET, PACKAGE_INDEXES, filter, this.records.values(), opts);
    return { records: found.records.map((r) => this.present(r)), total: found.total };
  }

  snapshot(): PapiSnapshot {
    return { v: 1, nextId: this.nextId, packages: [...this.records.values()] };
  }

  restore(snap: unknown): void {
    const s = snap as Partial<PapiSnapshot> | null;
    if (!s || s.v !== 1 || !Array.isArray(s.packages)) throw new Error('not a PAPI state document (v 1)');
    this.records.clear();
    for (const r of s.packages) this.records.set(String(r.uuid), r);
    this.nextId = Math.max(Number(s.nextId) || 1, ...s.packages.map((r) => Number(r._id) + 1));
  }

  private present(stored: Pkg): Pkg {
    const { _id: _, ...rest } = structuredClone(stored);
    return decodePackage(rest);
  }
}
