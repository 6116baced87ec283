/**
 * A new CN's MAC addresses and admin NIC: a MAC pair (dnet0, dnet1) no CN of this daemon has,
 * drawn from the CN's seeded stream and checked free in NAPI, and the admin NIC made on NAPI's
 * admin network (`POST /networks/admin/nics`, owned by the admin user as the original
 * create-server tool made it), whose IP becomes the CN's "Admin IP". A POST whose answer was
 * lost is resolved by asking NAPI for the MAC; a refusal (a duplicate MAC) is told apart so the
 * creation draws again. Without a NAPI URL the admin IP is the bind IP and nothing is asked.
 */
import type { JsonHttpClient } from '../common/http-client.js';
import { MockcloudError } from '../common/errors.js';
import { macPairFrom, randomMockMac } from '../mockcn/sysinfo-template.js';
import { normalizeMac } from '../vmadm/nics.js';
import type { DaemonConfig } from './config.js';
import type { CnStreams } from './creation-draws.js';
import type { Fleet } from './fleet.js';
import { answerError, withCleanupRetries } from './owned-cleanup.js';

/** Draws of a MAC pair, and posts of an admin NIC refused as duplicates, before a creation gives up. */
export const MAC_ATTEMPTS = 5;

export interface AdminNicsOptions {
  config: DaemonConfig;
  fleet: Fleet;
  http: JsonHttpClient;
  countError: (kind: string) => void;
  /** The MAC draw; from the CN's seeded stream by default (tests force clashes with it). */
  randomMac?: (() => string) | undefined;
  /** The daemon is stopping: retries stop waiting. */
  stopped?: (() => boolean) | undefined;
}

export class AdminNics {
  private readonly napi: string | undefined;
  private takenMacs: Set<string> | undefined;

  constructor(private readonly o: AdminNicsOptions) {
    this.napi = o.config.urls.napi;
  }

  /** A MAC pair no CN of this daemon has or is being given, drawn from the CN's stream. */
  drawLocalPair(streams: CnStreams): { admin: string; extra: string } {
    const taken = this.macsTaken();
    for (let i = 0; i < MAC_ATTEMPTS; i++) {
      const pair = macPairFrom(this.o.randomMac ? this.o.randomMac() : randomMockMac(streams.mac));
      if (taken.has(pair.admin) || taken.has(pair.extra)) continue;
      taken.add(pair.admin);
      taken.add(pair.extra);
      return pair;
    }
    throw new MockcloudError('ServiceUnavailable', `no free MAC address found in ${MAC_ATTEMPTS} attempts`);
  }

  /**
   * A CN's MAC pair (macPairFrom: an even admin MAC and the next one) that no mock CN of this
   * daemon has or is being given. NAPI is asked about the second one only: the admin MAC is
   * checked by NAPI itself when the admin NIC is made (a duplicate is refused, and drawn
   * again), and the second one is taken wherever the admin MAC is, except by a CN made before
   * MACs came in pairs, which NAPI knows.
   */
  async freeMacPair(first: { admin: string; extra: string } | undefined, streams: CnStreams): Promise<{ admin: string; extra: string }> {
    for (let i = 0; i < MAC_ATTEMPTS; i++) {
      const pair = i === 0 && first ? first : this.drawLocalPair(streams);
      if (!this.napi) return pair;
      const nicPath = `/nics/${pair.extra.replace(/:/g, '')}`;
      const res = await this.napiCall('GET', nicPath);
      if (res.statusCode === 404) return pair;
      if (res.statusCode >= 200 && res.statusCode < 300) continue;
      throw napiError(`GET ${nicPath}`, res);
    }
    throw new MockcloudError('ServiceUnavailable', `no free MAC address found in ${MAC_ATTEMPTS} attempts`);
  }

  /** Built once from the fleet, then kept by `freeMacPair` (a deleted CN's MACs stay taken: harmless). */
  private macsTaken(): Set<string> {
    if (!this.takenMacs) {
      this.takenMacs = new Set();
      for (const cn of this.o.fleet.list()) {
        for (const nic of Object.values(cn.sysinfo['Network Interfaces'] ?? {})) {
          const mac = (nic as { 'MAC Address'?: unknown })['MAC Address'];
          if (typeof mac === 'string') this.takenMacs.add(normalizeMac(mac));
        }
      }
    }
    return this.takenMacs;
  }

  /**
   * The admin NIC, from NAPI's admin network. A POST whose answer is lost (a reset socket, a
   * timeout) may or may not have made the NIC; the MAC is ours (drawn free, recorded in the
   * creation marker), so NAPI is asked for it: a NIC with it is the one asked for, none means
   * the POST can be sent again.
   */
  async allocateAdminNic(mac: string): Promise<string> {
    if (!this.napi) return this.o.config.bindIp;
    const nicPath = `/nics/${mac.replace(/:/g, '')}`;
    for (let attempt = 1; ; attempt++) {
      try {
        // Sent again: on a connection of its own (the pool's idle ones may be as stale).
        return await this.postAdminNic(mac, attempt > 1);
      } catch (err) {
        if (!(err instanceof MockcloudError && err.cause !== undefined) || attempt >= 3) throw err; // NAPI answered
      }
      const got = await withCleanupRetries(this.o.stopped, () => this.napiCall('GET', nicPath));
      const ip = (got.body as { ip?: unknown } | undefined)?.ip;
      if (got.statusCode === 200 && typeof ip === 'string' && ip !== '') return ip;
      if (got.statusCode !== 404) throw napiError(`GET ${nicPath}`, got);
    }
  }

  private async postAdminNic(mac: string, freshConnection: boolean): Promise<string> {
    const admin = this.o.config.adminUuid;
    const res = await this.napiCall(
      'POST',
      '/networks/admin/nics',
      { belongs_to_type: 'other', belongs_to_uuid: admin, owner_uuid: admin, mac, nic_tags_provided: ['admin'] },
      freshConnection,
    );
    const ip = (res.body as { ip?: unknown } | undefined)?.ip;
    if (res.statusCode < 200 || res.statusCode >= 300) throw new AdminNicRefused(napiError('POST /networks/admin/nics', res), isDuplicateMac(res.body));
    if (typeof ip !== 'string' || ip === '') {
      throw new MockcloudError('BadGateway', 'NAPI POST /networks/admin/nics answered without an ip');
    }
    return ip;
  }

  private async napiCall(method: 'GET' | 'POST', path: string, body?: unknown, freshConnection = false) {
    try {
      return await this.o.http.request({
        method,
        url: `${this.napi}${path}`,
        ...(body === undefined ? {} : { body }),
        ...(freshConnection ? { freshConnection } : {}),
      });
    } catch (err) {
      this.o.countError('napi');
      throw new MockcloudError('BadGateway', `NAPI ${method} ${path} (${this.napi}): ${(err as Error).message}`, { cause: err });
    }
  }
}

/** NAPI answered the admin NIC's POST with a refusal: no NIC was made. */
export class AdminNicRefused extends Error {
  constructor(
    readonly error: MockcloudError,
    readonly duplicateMac: boolean,
  ) {
    super(error.message);
  }
}

/** NAPI's answer to a NIC whose MAC it has: InvalidParameters, `mac` Duplicate (sdc-napi nic/create.js). */
function isDuplicateMac(body: unknown): boolean {
  const errors = (body as { errors?: { field?: string; code?: string }[] } | undefined)?.errors;
  return Array.isArray(errors) && errors.some((e) => e?.field === 'mac' && e.code === 'Duplicate');
}

function napiError(what: string, res: { statusCode: number; body: unknown }): MockcloudError {
  return answerError('NAPI', what, res);
}
