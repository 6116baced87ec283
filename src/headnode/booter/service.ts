/**
 * The dev headnode's booter: the DHCP side of sdc-booter's `dhcpd` (lib/dhcpd.js) on a loopback
 * UDP port, and its HTTP side (the zone's nginx serving the TFTP root) on a loopback TCP port.
 *
 * DHCP, as booter answers: only DHCPDISCOVER and DHCPREQUEST from PXE clients (class id
 * `PXEClient...` or `SUNW...`); a DISCOVER runs the boot-params pipeline (boot-params.ts:
 * NIC lookup or provisioning in NAPI, boot params from CNAPI) and keeps the result as the MAC's
 * lease, a REQUEST is answered from that lease; the answer carries the NIC's IP, netmask,
 * gateway, resolvers, the lease time, the server id and the boot file (`boot.ipxe.01<MAC>` for
 * iPXE). A request that came through a relay (option 82) is answered by unicast to the address
 * and port it came from, with giaddr and option 82 echoed and the gateway the NIC's.
 *
 * What booter would broadcast (a request with no option 82) the dev booter does not answer at
 * all: nothing here is ever broadcast. Two DISCOVERs of one MAC at once share one pipeline (a
 * real booter runs it twice); every answer is still sent.
 *
 * HTTP: `GET /boot.ipxe.01<MAC>` is the iPXE script of the MAC's lease (ipxe.ts).
 *
 * Bounded as every listener of the daemon (docs/architecture.md): a DHCP packet larger than
 * MAX_DHCP_PACKET_BYTES is not read (wire.ts); the HTTP side has the connection guard's
 * deadlines and a cap of 1024 connections, the oldest idle ones closed first.
 */
import dgram from 'node:dgram';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { capMessage, ConnectionGuard } from '../../common/connection-guard.js';
import {
  BOOTREPLY,
  BOOTREQUEST,
  decodeDhcp,
  DHCPACK,
  DHCPDISCOVER,
  DHCPOFFER,
  DHCPREQUEST,
  encodeDhcp,
  messageType,
  OPT,
  parseRelayAgentInfo,
  type DhcpPacket,
} from '../../common/dhcp/wire.js';
import { Gate } from '../../common/gate.js';
import { JsonHttpClient } from '../../common/http-client.js';
import { failureFields, logFailure, type Logger } from '../../common/log.js';
import { cidrContains } from '../../common/ipv4.js';
import { napiIpv4, napiSubnet } from '../napi/addr.js';
import { BootParamsSource, nicTagOfCircuit, type BootParams } from './boot-params.js';
import { buildIpxeScript, ipxeFileName } from './ipxe.js';

export interface DevBooterOptions {
  log: Logger;
  napiUrl: string;
  cnapiUrl: string;
  adminUuid: string;
  /** Option 51 (booter's config `leaseTime`); 30 days by default, as COAL's. */
  leaseSeconds?: number;
}

/** What the booter did, for `mockcloud status` and tests. */
export interface DevBooterStats {
  discovers: number;
  requests: number;
  offers: number;
  acks: number;
  /** Packets it did not answer: not DHCP, not a DISCOVER/REQUEST, not PXE, not relayed. */
  ignored: number;
  /** DISCOVERs whose boot params could not be had (NAPI or CNAPI failed) and no lease to fall back on. */
  failures: number;
  /** REQUESTs of a MAC with no lease. */
  noLease: number;
}

const PIPELINES_AT_ONCE = 4;
const MAX_HTTP_CONNECTIONS = 1024;

/** RFC 4578 client architecture 7: EFI x86-64 gets the EFI iPXE (lib/dhcp.js DHCP_CLIENT_ARCH_TYPE). */
const EFI_X86_64 = 7;

export class DevBooter {
  private sock: dgram.Socket | undefined;
  private httpServer: http.Server | undefined;
  private readonly http: JsonHttpClient;
  private readonly source: BootParamsSource;
  /** The lease of each MAC: its last boot params (sdc-booter's cache dir, `<mac>.json`). */
  private readonly leases = new Map<string, BootParams>();
  private readonly inFlight = new Map<string, Promise<BootParams | undefined>>();
  /**
   * Pipelines running at once. sdc-booter runs every one at once, against NAPI and CNAPI in
   * other zones; the dev booter shares its process with them, so a storm of DISCOVERs takes
   * turns and CNAPI keeps answering the heartbeats of the CNs that stayed up.
   */
  private readonly turns = new Gate(PIPELINES_AT_ONCE);
  private readonly connections: ConnectionGuard;
  private readonly log: Logger;
  private host = '127.0.0.1';
  private stopped = false;
  readonly counts: DevBooterStats = { discovers: 0, requests: 0, offers: 0, acks: 0, ignored: 0, failures: 0, noLease: 0 };

  constructor(private readonly opts: DevBooterOptions) {
    this.log = opts.log.child({ component: 'booter' });
    this.connections = new ConnectionGuard(
      { maxConnections: MAX_HTTP_CONNECTIONS },
      { onCap: (report) => this.log.warn({ connections: report }, capMessage("booter's HTTP", report)) },
    );
    // sdc-booter's clients: one agent, no retries (lib/clients.js `retry: false`).
    this.http = new JsonHttpClient({ maxSockets: 32, timeoutMs: 20_000, userAgent: 'booter/1.7.5 (mockcloud)' });
    this.source = new BootParamsSource({ http: this.http, napiUrl: opts.napiUrl, cnapiUrl: opts.cnapiUrl, adminUuid: opts.adminUuid });
  }

  /** Where DHCP requests go (UDP). */
  get dhcpAddress(): { ip: string; port: number } {
    const a = this.sock?.address();
    if (!a) throw new Error('booter is not started');
    return { ip: a.address, port: a.port };
  }

  /** Booter's HTTP root (the boot files). */
  get httpUrl(): string {
    const a = this.httpServer?.address() as AddressInfo | null | undefined;
    if (!a) throw new Error('booter is not started');
    return `http://${this.host}:${a.port}`;
  }

  /** The Service contract of the headnode: its DHCP address as a URL-ish string. */
  get url(): string {
    const a = this.dhcpAddress;
    return `udp://${a.ip}:${a.port}`;
  }

  async start(where: { host: string; port: number; httpPort?: number }): Promise<void> {
    this.host = where.host;
    const sock = dgram.createSocket({ type: where.host.includes(':') ? 'udp6' : 'udp4' });
    sock.on('message', (msg, peer) => {
      // CNAPI away or answering an error: the CN retransmits, as it does to sdc-booter (a WARN, no stack).
      this.onMessage(msg, peer).catch((err: unknown) => logFailure(this.log, err, {}, 'booter: handling a DHCP message failed'));
    });
    sock.on('error', (err) => this.log.error(failureFields(err), 'booter socket error'));
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(where.port, where.host, () => {
        sock.off('error', reject);
        resolve();
      });
    });
    this.sock = sock;
    const server = http.createServer((req, res) => {
      try {
        this.onHttp(req, res);
      } catch (err) {
        this.log.error({ err }, 'booter: serving a boot file failed');
        if (!res.headersSent) send(res, 500, 'internal error\n');
        else res.destroy();
      }
    });
    this.connections.watch(server);
    this.connections.start();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // A backlog as deep as the cap: with Node's 511, a burst of connections (a boot storm's
      // fetches, or a flood) overflows the accept queue and, with SYN cookies on, the overflow
      // is connected for the client but never reaches booter, so never meets the guard either.
      server.listen({ port: where.httpPort ?? 0, host: where.host, backlog: MAX_HTTP_CONNECTIONS }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.httpServer = server;
    this.log.info({ dhcp: this.dhcpAddress, http: this.httpUrl }, 'dev booter listening');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.connections.stop();
    const sock = this.sock;
    this.sock = undefined;
    if (sock) await new Promise<void>((resolve) => sock.close(() => resolve()));
    const server = this.httpServer;
    this.httpServer = undefined;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    this.http.close();
  }

  /** The lease booter keeps for a MAC (tests, diagnostics). */
  lease(mac: string): BootParams | undefined {
    return this.leases.get(mac.toLowerCase());
  }

  private async onMessage(msg: Buffer, peer: dgram.RemoteInfo): Promise<void> {
    let packet: DhcpPacket;
    try {
      packet = decodeDhcp(msg);
    } catch {
      this.counts.ignored++;
      return;
    }
    const type = messageType(packet);
    if (packet.op !== BOOTREQUEST || (type !== DHCPDISCOVER && type !== DHCPREQUEST)) {
      this.counts.ignored++;
      return;
    }
    const classId = packet.options[OPT.classId];
    if (typeof classId !== 'string' || !(classId.startsWith('PXEClient') || classId.startsWith('SUNW'))) {
      this.log.debug({ mac: packet.chaddr }, 'booter: not a PXE client: not responding');
      this.counts.ignored++;
      return;
    }
    const relay = packet.options[OPT.relayAgentInfo];
    if (!Array.isArray(relay)) {
      // sdc-booter broadcasts this answer to 255.255.255.255:68; the dev booter sends no broadcast.
      this.log.debug({ mac: packet.chaddr }, 'booter: no relay agent information: not broadcasting an answer');
      this.counts.ignored++;
      return;
    }
    const mac = packet.chaddr;
    let params: BootParams | undefined;
    if (type === DHCPDISCOVER) {
      this.counts.discovers++;
      params = await this.discover(mac, nicTagOfCircuit(parseRelayAgentInfo(relay).circuitId));
      if (!params) return;
    } else {
      this.counts.requests++;
      params = this.leases.get(mac);
      if (!params) {
        this.counts.noLease++;
        this.log.warn({ mac }, 'booter: DHCPREQUEST of a MAC with no lease: not responding');
        return;
      }
    }
    if (this.stopped || !this.sock) return;
    const reply = this.reply(packet, type === DHCPDISCOVER ? DHCPOFFER : DHCPACK, params);
    const sock = this.sock;
    await new Promise<void>((resolve) => {
      sock.send(reply, peer.port, peer.address, (err) => {
        if (err) this.log.warn({ err, mac }, 'booter: sending the answer failed');
        else if (type === DHCPDISCOVER) this.counts.offers++;
        else this.counts.acks++;
        resolve();
      });
    });
  }

  /** The boot params of a DISCOVER (one pipeline per MAC at a time); the lease when it fails. */
  private async discover(mac: string, nicTag: string | undefined): Promise<BootParams | undefined> {
    let running = this.inFlight.get(mac);
    if (!running) {
      running = this.turns.run(() => this.source.forMac(mac, nicTag)).then(
        (params) => {
          this.leases.set(mac, params);
          return params;
        },
        (err: unknown) => {
          const cached = this.leases.get(mac);
          this.log.warn({ err, mac, fallback: cached !== undefined }, 'booter: getting the boot params failed');
          if (!cached) this.counts.failures++;
          return cached;
        },
      );
      running = running.finally(() => this.inFlight.delete(mac));
      this.inFlight.set(mac, running);
    }
    return running;
  }

  private reply(req: DhcpPacket, type: number, p: BootParams): Buffer {
    const serverIp = this.host;
    const options: Record<number, unknown> = {
      [OPT.subnetMask]: p.netmask,
      [OPT.leaseTime]: this.opts.leaseSeconds ?? 2_592_000,
      [OPT.messageType]: type,
      [OPT.serverId]: serverIp,
    };
    const relayed = req.giaddr !== undefined && req.giaddr !== '0.0.0.0';
    if (relayed) {
      const gateway = p.gateway ?? routeToBooter(p.routes, serverIp);
      if (gateway) options[OPT.router] = [gateway];
      options[OPT.relayAgentInfo] = req.options[OPT.relayAgentInfo];
    }
    if (p.resolvers && p.resolvers.length > 0) options[OPT.dnsServers] = p.resolvers;
    return encodeDhcp({
      op: BOOTREPLY,
      xid: req.xid,
      flags: req.flags ?? 0,
      yiaddr: p.ip,
      siaddr: serverIp,
      ...(relayed ? { giaddr: req.giaddr } : {}),
      chaddr: req.chaddr,
      file: bootFile(req),
      options,
    });
  }

  private onHttp(req: http.IncomingMessage, res: http.ServerResponse): void {
    const name = (req.url ?? '/').split('?')[0]!.replace(/^\/+/, '');
    const m = /^boot\.ipxe\.01([0-9A-F]{12})$/.exec(name);
    const mac = m ? m[1]!.toLowerCase().match(/../g)!.join(':') : undefined;
    const lease = mac ? this.leases.get(mac) : undefined;
    // Not chained: restify, loaded in this process, patches ServerResponse's writeHead.
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, '', { allow: 'GET, HEAD' });
    if (!lease || !mac) return send(res, 404, 'not found\n');
    send(res, 200, req.method === 'HEAD' ? '' : buildIpxeScript(mac, lease));
  }
}

function send(res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.statusCode = status;
  res.setHeader('content-type', 'text/plain');
  res.setHeader('content-length', Buffer.byteLength(body));
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.end(body);
}

/** The boot file: iPXE gets its script, a PXE ROM the iPXE to chain-load (EFI or legacy). */
function bootFile(req: DhcpPacket): string {
  if (req.options[OPT.userClass] === 'iPXE') return ipxeFileName(req.chaddr);
  const arch = req.options[OPT.clientArch];
  return Array.isArray(arch) && arch[0] === EFI_X86_64 ? 'snponly.efi' : 'undionly.kpxe';
}

/** Booter's `_findRouteToBooter`: the route of the NIC's network whose destination holds the booter. */
function routeToBooter(routes: Record<string, string> | undefined, serverIp: string): string | undefined {
  const ip = napiIpv4(serverIp);
  if (ip === undefined) return undefined;
  for (const [dest, gw] of Object.entries(routes ?? {})) {
    const cidr = napiSubnet(dest.includes('/') ? dest : `${dest}/32`);
    if (cidr && cidrContains(cidr, ip)) return gw;
  }
  return undefined;
}
