/**
 * The daemon's timing: which profile applies where, the adjustments events make for a while,
 * and the seeded draws.
 *
 * Which profile a draw uses, first hit wins: an event's profile for the CN (or the VM); the
 * CN's hardware profile's `timing:`; the daemon's (`--timing`, or the control API's). An
 * event's `factor` then multiplies the draw (several multiply).
 *
 * Draws are seeded: with `--seed`, each CN has its own stream (and the headnode one), so the
 * same commands sent to the same CNs draw the same durations, whatever else runs meanwhile.
 * A CN's stream is made on its first draw; an instant profile draws nothing.
 */
import { randomStream, type RandomStream } from '../common/seeded-random.js';
import { drawMs, isZero, type DrawContext } from './figure.js';
import { figureOf, type TimingProfile } from './profile.js';

/** What an event changes for a while (docs/timing.md). */
export interface TimingAdjustment {
  /** The CNs it applies to (undefined: every CN, and the headnode). */
  servers?: ReadonlySet<string>;
  /** Only these VMs' stages and tasks (undefined: every VM of the servers). */
  vms?: ReadonlySet<string>;
  /** Only keys starting with one of these ("tasks", "vm.boot", "tasks.machine_create"). */
  keys?: readonly string[];
  /** Durations multiplied by this. */
  factor?: number;
  /** This profile instead of the CN's. */
  profile?: TimingProfile;
}

/** Where a draw happens: a CN (and maybe one of its VMs), or the headnode. */
export interface DrawWhere extends DrawContext {
  /** The CN's uuid; undefined: the dev headnode. */
  server?: string | undefined;
  vm?: string | undefined;
}

/** The scope of the headnode's stream. */
const HEADNODE = 'headnode';

export interface TimingOptions {
  profile: TimingProfile;
  /** --seed: the streams' seed (undefined: unpredictable draws). */
  seed?: string | undefined;
  /** A CN's own profile (its hardware profile's `timing:`), if it has one. */
  profileOfServer?: (server: string) => TimingProfile | undefined;
}

export class Timing {
  private current: TimingProfile;
  private readonly seed: string | undefined;
  private readonly profileOfServer: ((server: string) => TimingProfile | undefined) | undefined;
  private readonly streams = new Map<string, RandomStream>();
  private readonly adjustments = new Set<TimingAdjustment>();

  constructor(opts: TimingOptions) {
    this.current = opts.profile;
    this.seed = opts.seed;
    this.profileOfServer = opts.profileOfServer;
  }

  /** The daemon's profile. */
  get profile(): TimingProfile {
    return this.current;
  }

  /** Replace the daemon's profile (the control API); draws from now on use it. */
  setProfile(profile: TimingProfile): void {
    this.current = profile;
  }

  /** Apply `adj` until the returned function is called. */
  adjust(adj: TimingAdjustment): () => void {
    this.adjustments.add(adj);
    return () => void this.adjustments.delete(adj);
  }

  get activeAdjustments(): readonly TimingAdjustment[] {
    return [...this.adjustments];
  }

  /** The profile that applies to a draw there (adjustments' factors aside). */
  profileAt(where: DrawWhere, key?: string): TimingProfile {
    for (const adj of this.adjustments) {
      if (adj.profile && applies(adj, where, key)) return adj.profile;
    }
    if (where.server !== undefined) {
      const own = this.profileOfServer?.(where.server);
      if (own) return own;
    }
    return this.current;
  }

  /**
   * One duration (ms) of `key` there. 0 without a draw when the figure is zero (the instant
   * profile costs nothing).
   */
  ms(key: string, where: DrawWhere = {}): number {
    const figure = figureOf(this.profileAt(where, key), key);
    let factor = 1;
    for (const adj of this.adjustments) if (adj.factor !== undefined && applies(adj, where, key)) factor *= adj.factor;
    if (isZero(figure)) return 0;
    const stream = this.streamOf(where.server ?? HEADNODE);
    return Math.round(drawMs(figure, () => stream.next(), where) * factor);
  }

  /** Whether every draw of `key` there is 0 (nothing to wait for, no state to show). */
  isZero(key: string, where: DrawWhere = {}): boolean {
    return isZero(figureOf(this.profileAt(where, key), key));
  }

  /** Forget a CN's stream (it was deleted). */
  forget(server: string): void {
    this.streams.delete(server);
  }

  private streamOf(scope: string): RandomStream {
    let s = this.streams.get(scope);
    if (!s) {
      s = randomStream(this.seed, `timing:${scope}`);
      this.streams.set(scope, s);
    }
    return s;
  }
}

function applies(adj: TimingAdjustment, where: DrawWhere, key: string | undefined): boolean {
  if (adj.servers && (where.server === undefined || !adj.servers.has(where.server))) return false;
  if (adj.vms && (where.vm === undefined || !adj.vms.has(where.vm))) return false;
  if (adj.keys && key !== undefined && !adj.keys.some((k) => key === k || key.startsWith(`${k}.`))) return false;
  return true;
}
