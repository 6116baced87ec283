/**
 * What the services give a journaled document (store.ts): which records changed since the last
 * save, and, at load, the stored document with the journal's entries applied.
 */

/** A Map that remembers which keys were set or deleted since `takeChanged()`. */
export class TrackedMap<K, V> extends Map<K, V> {
  private changed = new Set<K>();
  /** Called on every change (e.g. to say a whole rewrite is due). */
  onChange: ((key: K) => void) | undefined;

  override set(key: K, value: V): this {
    // Map's constructor calls set() before the field initializers ran.
    this.changed?.add(key);
    this.onChange?.(key);
    return super.set(key, value);
  }

  override delete(key: K): boolean {
    const had = super.delete(key);
    if (had) {
      this.changed.add(key);
      this.onChange?.(key);
    }
    return had;
  }

  override clear(): void {
    for (const k of this.keys()) this.changed.add(k);
    super.clear();
  }

  /** The keys changed since the last call (a key set and deleted again is among them). */
  takeChanged(): K[] {
    const out = [...this.changed];
    this.changed = new Set();
    return out;
  }

  /** Forget the changes so far (after a restore, or a whole rewrite). */
  forgetChanges(): void {
    this.changed = new Set();
  }
}

/** One journal entry for a keyed record: its whole value now, or null when it is gone. */
export interface RecordEntry<V> {
  k: string;
  v: V | null;
}

/**
 * The records of a stored array (each with its key in `keyField`) with journal entries applied
 * in order: the last entry for a key wins; null deletes. Order of the survivors: stored order,
 * then new keys in the order they first appeared.
 */
export function applyRecordEntries<V extends object>(stored: V[], keyField: keyof V, entries: RecordEntry<V>[]): V[] {
  const byKey = new Map<string, V>();
  for (const r of stored) byKey.set(String(r[keyField]), r);
  for (const e of entries) {
    if (e.v === null) byKey.delete(e.k);
    else byKey.set(e.k, e.v);
  }
  return [...byKey.values()];
}
