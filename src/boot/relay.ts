/**
 * The DHCP relay agent every mock CN's boot goes through: ONE UDP socket for the whole fleet,
 * as a rack's relay forwards all its servers' DHCP. Each CN's packets go out with the relay's
 * address as giaddr and option 82 (RFC 3046: the circuit id of the rack, or the relay's remote
 * id), so sdc-booter answers by unicast to this socket (lib/dhcpd.js sendReply), and the
 * answers are handed to the CN waiting for their transaction id.
 *
 * Safety: a packet is only ever sent to the configured booter address and port (nothing is
 * broadcast: the socket never enables broadcast); answers from any other address, answers that
 * are not DHCP, for a transaction no CN waits for, for another MAC, and NAKs are not used: they
 * are dropped and counted (`counts.unused`).
 */
import dgram from 'node:dgram';
import {
  BOOTREPLY,
  decodeDhcp,
  DHCPNAK,
  encodeDhcp,
  messageType,
  OPT,
  relayAgentInfo,
  type DhcpPacket,
} from '../common/dhcp/wire.js';
import type { Logger } from '../common/log.js';

export interface DhcpRelayOptions {
  /** Where booter listens: the only address anything is sent to. */
  booter: { ip: string; port: number };
  /** The relay's own address (bound with port 0); it is the packets' giaddr. */
  bindIp: string;
  /** Option 82 circuit id: the rack (booter takes NIC tag `admin_rack_<id>` from it). */
  circuitId?: string;
  /** Option 82 remote id, sent when there is no circuit id (an RFC 3046 relay sends one sub-option at least). */
  remoteId: string;
  log: Logger;
}

export type UnusedReason = 'malformed' | 'foreign' | 'unknownXid' | 'wrongMac' | 'nak' | 'unexpected';

/** A CN waiting for answers of one transaction; returns why an answer was not used, or nothing. */
export type ReplyHandler = (packet: DhcpPacket) => UnusedReason | undefined;

export interface RelayCounts {
  sent: number;
  received: number;
  unused: Record<UnusedReason, number>;
  sendErrors: number;
}

export class DhcpRelay {
  private sock: dgram.Socket | undefined;
  private readonly waiting = new Map<number, { mac: string; handler: ReplyHandler }>();
  private readonly option82: number[];
  readonly counts: RelayCounts = {
    sent: 0,
    received: 0,
    unused: { malformed: 0, foreign: 0, unknownXid: 0, wrongMac: 0, nak: 0, unexpected: 0 },
    sendErrors: 0,
  };

  constructor(private readonly o: DhcpRelayOptions) {
    this.option82 = relayAgentInfo(o.circuitId ? { circuitId: o.circuitId } : { remoteId: o.remoteId });
  }

  get booter(): { ip: string; port: number } {
    return { ...this.o.booter };
  }

  get circuitId(): string | undefined {
    return this.o.circuitId;
  }

  /** The relay's address (giaddr); known once started. */
  get address(): { ip: string; port: number } | undefined {
    const a = this.sock?.address();
    return a ? { ip: a.address, port: a.port } : undefined;
  }

  async start(): Promise<void> {
    const sock = dgram.createSocket({ type: this.o.bindIp.includes(':') ? 'udp6' : 'udp4' });
    sock.on('message', (msg, from) => this.onMessage(msg, from));
    sock.on('error', (err) => this.o.log.warn({ err }, 'DHCP relay socket error'));
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(0, this.o.bindIp, () => {
        sock.off('error', reject);
        resolve();
      });
    });
    this.sock = sock;
  }

  async stop(): Promise<void> {
    const sock = this.sock;
    this.sock = undefined;
    this.waiting.clear();
    if (sock) await new Promise<void>((resolve) => sock.close(() => resolve()));
  }

  /** Wait for answers of transaction `xid` for `mac`; the returned function stops waiting. */
  expect(xid: number, mac: string, handler: ReplyHandler): () => void {
    const entry = { mac, handler };
    this.waiting.set(xid, entry);
    return () => {
      if (this.waiting.get(xid) === entry) this.waiting.delete(xid);
    };
  }

  /** Whether a transaction id is taken (a new one is drawn then). */
  isWaiting(xid: number): boolean {
    return this.waiting.has(xid);
  }

  /**
   * Send a CN's request to booter as this relay: giaddr, hops and option 82 are the relay's.
   * Resolves false when it could not be sent (no socket, a send error): the CN's retransmission
   * schedule goes on as for a lost packet.
   */
  async send(packet: DhcpPacket): Promise<boolean> {
    const sock = this.sock;
    const giaddr = this.address?.ip;
    if (!sock || !giaddr) return false;
    const buf = encodeDhcp({
      ...packet,
      giaddr,
      hops: (packet.hops ?? 0) + 1,
      options: { ...packet.options, [OPT.relayAgentInfo]: this.option82 },
    });
    const { ip, port } = this.o.booter;
    return new Promise<boolean>((resolve) => {
      sock.send(buf, port, ip, (err) => {
        if (err) {
          this.counts.sendErrors++;
          resolve(false);
          return;
        }
        this.counts.sent++;
        resolve(true);
      });
    });
  }

  private onMessage(msg: Buffer, from: dgram.RemoteInfo): void {
    this.counts.received++;
    if (from.address !== this.o.booter.ip || from.port !== this.o.booter.port) return this.unused('foreign');
    let packet: DhcpPacket;
    try {
      packet = decodeDhcp(msg);
    } catch {
      return this.unused('malformed');
    }
    if (packet.op !== BOOTREPLY) return this.unused('unexpected');
    const w = this.waiting.get(packet.xid);
    if (!w) return this.unused('unknownXid');
    if (packet.chaddr !== w.mac) return this.unused('wrongMac');
    if (messageType(packet) === DHCPNAK) return this.unused('nak');
    const reason = w.handler(packet);
    if (reason) this.unused(reason);
  }

  private unused(reason: UnusedReason): void {
    this.counts.unused[reason]++;
  }
}
