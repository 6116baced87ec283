/**
 * The conditions events put on CNs (MockCn.conditions, read by the status report and the
 * heartbeat schedule). Lasting ones are kept per event and merged (the latest heartbeat,
 * the least memory), so ending one event leaves the others' in place; the zpool fill is a
 * state, not a condition: it stays when its event ends.
 */
import type { CnConditions, MockCn } from '../mockcn/types.js';

type Lasting = Pick<CnConditions, 'heartbeatLateMs' | 'availableMemoryBytes'>;

export class Conditions {
  private readonly byCn = new Map<string, Map<string, Lasting>>();

  set(cn: MockCn, event: string, c: Lasting): void {
    let m = this.byCn.get(cn.uuid);
    if (!m) this.byCn.set(cn.uuid, (m = new Map()));
    m.set(event, c);
    this.apply(cn);
  }

  clear(cn: MockCn, event: string): void {
    const m = this.byCn.get(cn.uuid);
    if (!m?.delete(event)) return;
    if (m.size === 0) this.byCn.delete(cn.uuid);
    this.apply(cn);
  }

  setPoolFill(cn: MockCn, fraction: number): void {
    cn.conditions = { ...cn.conditions, poolFill: fraction };
    cn.markStatusDirty();
  }

  private apply(cn: MockCn): void {
    const next: CnConditions = {};
    if (cn.conditions?.poolFill !== undefined) next.poolFill = cn.conditions.poolFill;
    for (const c of this.byCn.get(cn.uuid)?.values() ?? []) {
      if (c.heartbeatLateMs !== undefined) next.heartbeatLateMs = Math.max(next.heartbeatLateMs ?? 0, c.heartbeatLateMs);
      if (c.availableMemoryBytes !== undefined) {
        next.availableMemoryBytes = Math.min(next.availableMemoryBytes ?? Infinity, c.availableMemoryBytes);
      }
    }
    const before = cn.conditions?.availableMemoryBytes;
    cn.conditions = Object.keys(next).length > 0 ? next : undefined;
    if (before !== next.availableMemoryBytes) cn.markStatusDirty();
  }
}
