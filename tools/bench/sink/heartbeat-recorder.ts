/**
 * What the sink remembers per mock CN about its CNAPI traffic: when it first registered, when
 * it first and last heartbeated, and the longest gap between two of its heartbeats since the
 * last `mark()`. Kept small (one record per CN) because the sink serves 10,000 CNs.
 *
 * Times are epoch milliseconds (Date.now()) so the harness, in another process on the same
 * machine, can relate them to the moment it started the daemon.
 */

interface CnRecord {
  firstSysinfoAt: number;
  firstHeartbeatAt: number;
  lastHeartbeatAt: number;
  /** Longest gap between two consecutive heartbeats seen since the last mark. */
  maxGapMs: number;
  heartbeats: number;
  statusReports: number;
}

export interface HeartbeatSnapshot {
  /** CNs whose sysinfo registration the sink accepted. */
  registered: number;
  /** CNs that sent at least one heartbeat. */
  heartbeating: number;
  /** When the last CN to register did so (epoch ms); 0 when none. */
  lastFirstSysinfoAt: number;
  /** When the last CN to heartbeat sent its first one (epoch ms); 0 when none. */
  lastFirstHeartbeatAt: number;
  /**
   * The worst heartbeat gap of one CN since the mark: the longest time between two of its
   * heartbeats, or since its last heartbeat when that is longer (a CN that went silent).
   */
  worstGapMs: number;
  worstGapServer: string | null;
  /** CNs that heartbeated before and have not heartbeated since the mark. */
  silentSinceMark: number;
  /** Gaps between two heartbeats since the mark, and of them those over 6 s (how many CNs missed, not just the worst). */
  gapsSinceMark: number;
  gapsOver6sSinceMark: number;
}

const LATE_GAP_MS = 6000;

const NONE = 0;

export class HeartbeatRecorder {
  private readonly cns = new Map<string, CnRecord>();
  private markAt = 0;
  private gaps = 0;
  private gapsOver = 0;

  get size(): number {
    return this.cns.size;
  }

  get markedAt(): number {
    return this.markAt;
  }

  private record(uuid: string): CnRecord {
    let r = this.cns.get(uuid);
    if (!r) {
      r = { firstSysinfoAt: NONE, firstHeartbeatAt: NONE, lastHeartbeatAt: NONE, maxGapMs: 0, heartbeats: 0, statusReports: 0 };
      this.cns.set(uuid, r);
    }
    return r;
  }

  /** True when this server has registered (CNAPI knows it). */
  knows(uuid: string): boolean {
    return (this.cns.get(uuid)?.firstSysinfoAt ?? NONE) !== NONE;
  }

  sysinfo(uuid: string, now: number): void {
    const r = this.record(uuid);
    if (r.firstSysinfoAt === NONE) r.firstSysinfoAt = now;
  }

  heartbeat(uuid: string, now: number): void {
    const r = this.record(uuid);
    if (r.lastHeartbeatAt !== NONE) {
      const gap = now - r.lastHeartbeatAt;
      if (gap > r.maxGapMs) r.maxGapMs = gap;
      this.gaps++;
      if (gap > LATE_GAP_MS) this.gapsOver++;
    } else {
      r.firstHeartbeatAt = now;
    }
    r.lastHeartbeatAt = now;
    r.heartbeats++;
  }

  status(uuid: string): void {
    this.record(uuid).statusReports++;
  }

  forget(uuid: string): void {
    this.cns.delete(uuid);
  }

  /** One CN's worst gap since the mark, as `snapshot` counts it (0: it never heartbeated). */
  gapOf(uuid: string, now: number): number {
    const r = this.cns.get(uuid);
    if (!r || r.lastHeartbeatAt === NONE) return 0;
    return Math.max(r.maxGapMs, now - r.lastHeartbeatAt);
  }

  /** Start a new gap-measuring window: gaps seen before now no longer count. */
  mark(now: number): void {
    this.markAt = now;
    this.gaps = 0;
    this.gapsOver = 0;
    for (const r of this.cns.values()) r.maxGapMs = 0;
  }

  clear(): void {
    this.cns.clear();
    this.markAt = 0;
    this.gaps = 0;
    this.gapsOver = 0;
  }

  snapshot(now: number): HeartbeatSnapshot {
    const s: HeartbeatSnapshot = {
      registered: 0,
      heartbeating: 0,
      lastFirstSysinfoAt: 0,
      lastFirstHeartbeatAt: 0,
      worstGapMs: 0,
      worstGapServer: null,
      silentSinceMark: 0,
      gapsSinceMark: this.gaps,
      gapsOver6sSinceMark: this.gapsOver,
    };
    for (const [uuid, r] of this.cns) {
      if (r.firstSysinfoAt !== NONE) {
        s.registered++;
        if (r.firstSysinfoAt > s.lastFirstSysinfoAt) s.lastFirstSysinfoAt = r.firstSysinfoAt;
      }
      if (r.lastHeartbeatAt === NONE) continue;
      s.heartbeating++;
      if (r.firstHeartbeatAt > s.lastFirstHeartbeatAt) s.lastFirstHeartbeatAt = r.firstHeartbeatAt;
      if (this.markAt !== 0 && r.lastHeartbeatAt < this.markAt) s.silentSinceMark++;
      const gap = Math.max(r.maxGapMs, now - r.lastHeartbeatAt);
      if (gap > s.worstGapMs) {
        s.worstGapMs = gap;
        s.worstGapServer = uuid;
      }
    }
    return s;
  }
}
