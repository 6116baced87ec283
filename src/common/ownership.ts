/**
 * Never delete what you did not check (docs/architecture.md): before a delete or an update of
 * a Triton object, the daemon looks at the object the API gave back and goes on only when the
 * object says it is ours. A list's filter is not such a check: an older NAPI, a proxy, a bug or
 * a test double may drop it and answer every NIC of the DC. What fails the check is left alone
 * and counted (`LeftAlone`), and the caller logs it.
 *
 * These are the checks, on plain JSON as the APIs answer it; the calls that use them are listed
 * in docs/architecture.md.
 */

/** Who a NAPI NIC must belong to: `belongs_to_uuid` and `belongs_to_type` both. */
export interface NicOwner {
  uuid: string;
  type: 'server' | 'zone' | 'other';
  /** For a VM's NIC: the CN it must be on when NAPI says (`cn_uuid`), so a migrated VM's NIC is not taken. */
  cn?: string;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function sameUuid(a: unknown, b: string): boolean {
  return typeof a === 'string' && a.toLowerCase() === b.toLowerCase();
}

/** The NIC NAPI answered belongs to one of `owners`. */
export function nicBelongsTo(nic: unknown, owners: readonly NicOwner[]): boolean {
  const n = record(nic);
  if (!n) return false;
  return owners.some(
    (o) =>
      sameUuid(n.belongs_to_uuid, o.uuid) &&
      n.belongs_to_type === o.type &&
      (o.cn === undefined || n.cn_uuid === undefined || n.cn_uuid === null || sameUuid(n.cn_uuid, o.cn)),
  );
}

/** The VM VMAPI answered is on `server` (`server_uuid`). */
export function vmIsOnServer(vm: unknown, server: string): boolean {
  return sameUuid(record(vm)?.server_uuid, server);
}

/** The SAPI instance answered is one of `server`'s (RFD 82: `params.server_uuid`). */
export function instanceIsOfServer(instance: unknown, server: string): boolean {
  return sameUuid(record(record(instance)?.params)?.server_uuid, server);
}

/**
 * The CNAPI server record answered may be removed or changed by the daemon hosting `uuid`:
 * its uuid is that one, and its sysinfo (when it has one) is a mock CN's of this daemon, not a
 * real CN's ("System Type" other than Virtual) nor another daemon's ("Mockcloud Daemon").
 * Returns why not, or undefined when it is ours.
 */
export function cnapiServerNotOurs(server: unknown, uuid: string, daemonId: string | undefined): string | undefined {
  const s = record(server);
  if (!s) return 'CNAPI answered no server object';
  if (!sameUuid(s.uuid, uuid)) return `CNAPI answered server ${String(s.uuid)} for ${uuid}`;
  const sysinfo = record(s.sysinfo);
  if (!sysinfo) return undefined;
  const type = sysinfo['System Type'];
  if (type !== undefined && type !== 'Virtual') return `its sysinfo says "System Type": ${JSON.stringify(type)} (a real CN)`;
  const hostedBy = sysinfo['Mockcloud Daemon'];
  if (daemonId !== undefined && typeof hostedBy === 'string' && hostedBy !== '' && !hostedBy.startsWith(`${daemonId}@`) && hostedBy !== daemonId) {
    return `its sysinfo says another daemon hosts it ("Mockcloud Daemon": ${JSON.stringify(hostedBy)})`;
  }
  return undefined;
}

/** Objects left alone because they were not ours, by kind ('napi-nic', 'vmapi-vm', ...). */
export class LeftAlone {
  private readonly counts = new Map<string, number>();

  note(kind: string, n = 1): void {
    if (n > 0) this.counts.set(kind, (this.counts.get(kind) ?? 0) + n);
  }

  get total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort());
  }
}
