/**
 * One server's VM event stream. Events are dispatched synchronously, in commit order,
 * at the moment the index changes, so a subscriber's ready snapshot (taken in the same
 * synchronous step as its registration) plus the events after it is exactly the index,
 * with nothing lost or seen twice. A listener that throws is logged and skipped; it
 * neither breaks the write nor other listeners.
 */
import type { Logger } from '../common/log.js';
import type { VmEvent, VmEventListener } from './types.js';

export class EventHub {
  private readonly listeners = new Set<VmEventListener>();
  private seq = 0;

  constructor(private readonly log: Logger) {}

  get size(): number {
    return this.listeners.size;
  }

  add(listener: VmEventListener): () => void {
    // A wrapper per subscription, so the same function may subscribe twice.
    const own: VmEventListener = (ev) => listener(ev);
    this.listeners.add(own);
    return () => {
      this.listeners.delete(own);
    };
  }

  nextSeq(): number {
    return ++this.seq;
  }

  emit(ev: VmEvent): void {
    for (const l of [...this.listeners]) {
      try {
        l(ev);
      } catch (err) {
        this.log.warn({ err, vm: ev.uuid, type: ev.type }, 'VM event listener threw; ignored');
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
