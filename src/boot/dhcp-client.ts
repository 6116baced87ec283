/**
 * A booting CN's DHCP, as its PXE firmware (iPXE) does it: DHCPDISCOVER, then DHCPREQUEST for
 * the address the OFFER named, each sent again when no answer came within the schedule's next
 * timeout (4, 8, 16, 32 s); a round with no ACK by the end of it failed, and a new round (a new
 * transaction id) starts after a backoff, until one gets its lease or the boot is abandoned (the
 * daemon stops, the CN is removed).
 *
 * The CN says what it is as iPXE does: class id `PXEClient:Arch:00000:UNDI:002001`, user class
 * `iPXE`, client architecture 0 (BIOS x86); sdc-booter then names its iPXE script as the boot
 * file. Every wait is a job on the shared scheduler; nothing here keeps a timer of its own.
 */
import { randomInt } from 'node:crypto';
import { BOOTREQUEST, DHCPACK, DHCPDISCOVER, DHCPOFFER, DHCPREQUEST, messageType, OPT, type DhcpPacket } from '../common/dhcp/wire.js';
import { doublingDelay } from '../runtime/backoff.js';
import type { Scheduler, ScheduledJob } from '../runtime/scheduler.js';
import type { DhcpRelay } from './relay.js';
import type { BootTimings } from './timings.js';

/** What a CN takes from booter's DHCPACK. */
export interface Lease {
  ip: string;
  netmask?: string;
  gateway?: string;
  resolvers?: string[];
  /** Booter's address (siaddr, iPXE's `${next-server}`). */
  nextServer?: string;
  serverId?: string;
  /** The boot file named in the answer (booter: `boot.ipxe.01<MAC>` for iPXE). */
  file?: string;
  leaseSeconds?: number;
}

/** Told of each packet sent (retransmit: not the first of its message) and each round. */
export interface DhcpProgress {
  sent(retransmit: boolean): void;
  roundFailed(round: number): void;
}

export const PXE_CLASS_ID = 'PXEClient:Arch:00000:UNDI:002001';
const USER_CLASS = 'iPXE';
/** Options iPXE asks for: mask, router, DNS, hostname, domain, root path, vendor, class, TFTP server, boot file. */
const PARAMETER_LIST = [1, 3, 6, 12, 15, 17, 43, 60, 66, 67];

export class BootAbandoned extends Error {
  override readonly name = 'BootAbandoned';
}

export interface DhcpClientDeps {
  relay: DhcpRelay;
  scheduler: Scheduler;
  timings: BootTimings;
}

/** Rounds until a lease comes; rejects with BootAbandoned when `signal` aborts. */
export async function acquireLease(deps: DhcpClientDeps, mac: string, signal: AbortSignal, progress: DhcpProgress): Promise<Lease> {
  const started = Date.now();
  for (let round = 0; ; round++) {
    if (signal.aborted) throw new BootAbandoned('boot abandoned');
    const xid = freshXid(deps.relay);
    const base = { op: BOOTREQUEST, xid, chaddr: mac };
    const common = {
      [OPT.parameterList]: PARAMETER_LIST,
      [OPT.maxMessageSize]: 1472,
      [OPT.classId]: PXE_CLASS_ID,
      [OPT.userClass]: USER_CLASS,
      [OPT.clientArch]: [0],
    };
    const offer = await transact(deps, mac, signal, progress, started, { ...base, options: { [OPT.messageType]: DHCPDISCOVER, ...common } }, DHCPOFFER);
    if (offer && offer.yiaddr && offer.yiaddr !== '0.0.0.0') {
      const serverId = typeof offer.options[OPT.serverId] === 'string' ? (offer.options[OPT.serverId] as string) : undefined;
      const ack = await transact(
        deps,
        mac,
        signal,
        progress,
        started,
        {
          ...base,
          options: {
            [OPT.messageType]: DHCPREQUEST,
            ...common,
            [OPT.requestedIp]: offer.yiaddr,
            ...(serverId ? { [OPT.serverId]: serverId } : {}),
          },
        },
        DHCPACK,
      );
      if (ack && ack.yiaddr && ack.yiaddr !== '0.0.0.0') return leaseOf(ack);
    }
    if (signal.aborted) throw new BootAbandoned('boot abandoned');
    progress.roundFailed(round);
    await wait(deps.scheduler, doublingDelay(deps.timings.retryMinMs, deps.timings.retryMaxMs, round), signal);
  }
}

function leaseOf(ack: DhcpPacket): Lease {
  const o = ack.options;
  const router = o[OPT.router];
  const dns = o[OPT.dnsServers];
  const lease: Lease = { ip: ack.yiaddr! };
  if (typeof o[OPT.subnetMask] === 'string') lease.netmask = o[OPT.subnetMask] as string;
  if (Array.isArray(router) && typeof router[0] === 'string') lease.gateway = router[0];
  if (Array.isArray(dns)) lease.resolvers = dns.filter((d): d is string => typeof d === 'string');
  if (ack.siaddr && ack.siaddr !== '0.0.0.0') lease.nextServer = ack.siaddr;
  if (typeof o[OPT.serverId] === 'string') lease.serverId = o[OPT.serverId] as string;
  const file = ack.file || (typeof o[OPT.bootFile] === 'string' ? (o[OPT.bootFile] as string) : '');
  if (file) lease.file = file;
  if (typeof o[OPT.leaseTime] === 'number') lease.leaseSeconds = o[OPT.leaseTime] as number;
  return lease;
}

/** A transaction id no other CN of this relay uses right now. */
function freshXid(relay: DhcpRelay): number {
  for (;;) {
    const xid = randomInt(1, 0xffffffff);
    if (!relay.isWaiting(xid)) return xid;
  }
}

/**
 * Send `packet` and again after each timeout of the schedule until an answer of type `want`
 * comes (resolves with it) or the schedule ends (resolves undefined).
 */
function transact(
  deps: DhcpClientDeps,
  mac: string,
  signal: AbortSignal,
  progress: DhcpProgress,
  started: number,
  packet: DhcpPacket,
  want: number,
): Promise<DhcpPacket | undefined> {
  const timeouts = deps.timings.dhcpTimeoutsMs;
  return new Promise((resolve) => {
    let sends = 0;
    let job: ScheduledJob | undefined;
    let done = false;
    const finish = (answer: DhcpPacket | undefined): void => {
      if (done) return;
      done = true;
      deps.scheduler.cancel(job);
      stopWaiting();
      signal.removeEventListener('abort', onAbort);
      resolve(answer);
    };
    const onAbort = (): void => finish(undefined);
    const stopWaiting = deps.relay.expect(packet.xid, mac, (answer) => {
      if (messageType(answer) !== want) return 'unexpected';
      finish(answer);
      return undefined;
    });
    const fire = (): void => {
      if (done) return;
      if (sends >= timeouts.length) return finish(undefined);
      progress.sent(sends > 0);
      const secs = Math.min(0xffff, Math.floor((Date.now() - started) / 1000));
      void deps.relay.send({ ...packet, secs });
      job = deps.scheduler.schedule(timeouts[sends++]!, fire);
    };
    if (signal.aborted) return finish(undefined);
    signal.addEventListener('abort', onAbort);
    fire();
  });
}

/** `ms` on the shared scheduler; rejects with BootAbandoned when `signal` aborts first. */
export function wait(scheduler: Scheduler, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new BootAbandoned('boot abandoned'));
    const onAbort = (): void => {
      scheduler.cancel(job);
      reject(new BootAbandoned('boot abandoned'));
    };
    const job = scheduler.schedule(ms, () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
