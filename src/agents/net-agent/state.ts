/**
 * net-agent's per-CN, per-NIC and per-VM records. Data only: the logic lives in
 * nic-reconciler.ts, vm-push.ts and plugin.ts.
 */
import type { ScheduledJob } from '../../runtime/scheduler.js';
import type { MockCn } from '../../mockcn/types.js';
import type { VmSubscription } from '../../vmadm/types.js';
import type { LocalNic, NapiNic } from './fields.js';

/**
 * One MAC this CN has (or had) and NAPI's view of it. Its reconciler runs one step at a time,
 * and every step is derived from the desired state at that moment (`local`, or a release), never
 * from a queued operation: a retried update can therefore never land after a delete of the same
 * NIC, and a delete never overtakes an update in flight.
 */
export class NicTrack {
  /** What NAPI should say; undefined = the NIC is being released from `releaseOwner`. */
  local: LocalNic | undefined;
  releaseOwner: string | undefined;
  /** What kind of owner `releaseOwner` is: the CN itself ('server') or one of its VMs ('zone'). */
  releaseType: 'server' | 'zone' | undefined;
  /** For zone NICs: the VM that has it. */
  vmUuid: string | undefined;
  /** NAPI's copy: undefined = not asked yet, null = NAPI has none. */
  remote: NapiNic | null | undefined;
  etag: string | undefined;
  /** NAPI's copy must be fetched again before the next decision. */
  stale = true;
  /** The changefeed said NAPI deleted this NIC (an operator's act, not data loss). */
  deletedInNapi = false;
  /** NAPI deleted the NIC or gave it to another VM: the VM must drop it (and reboot). */
  lost = false;
  busy = false;
  dirty = false;
  attempt = 0;
  retryJob: ScheduledJob | undefined;
  /** Released and done: no longer in any index. */
  finished = false;
  /** Logged once that NAPI gives this MAC to someone else. */
  warnedForeign = false;

  constructor(
    readonly mac: string,
    readonly owner: CnNet,
  ) {}
}

/** Per VM: writing NAPI's view into the VM, one write at a time. */
export class VmPush {
  busy = false;
  dirty = false;
  attempt = 0;
  retryJob: ScheduledJob | undefined;
  /** The last payload written, to notice a store that does not converge (no write loops). */
  lastApplied: string | undefined;
  warnedNoConverge = false;
}

export class CnNet {
  /** Every MAC of this CN that net-agent tracks. */
  readonly nics = new Map<string, NicTrack>();
  /** VM uuid → its MACs. */
  readonly vmMacs = new Map<string, Set<string>>();
  readonly serverMacs = new Set<string>();
  readonly vmPush = new Map<string, VmPush>();
  subscription: VmSubscription | undefined;
  /** The first full pass ran: VM events are acted on from then on. */
  started = false;
  detached = false;
  passJob: ScheduledJob | undefined;
  /** Its NICs' steps running now (NAPI requests in flight): a removal waits for them. */
  readonly inFlight = new Set<Promise<void>>();

  constructor(readonly cn: MockCn) {}
}
