/**
 * The VMAPI state the sink keeps for vm-agent: every VM it was sent, stored as the JSON text it
 * arrived as (100,000 VMs at full scale: text is far smaller than parsed objects), indexed by
 * server. `GET /vms?server_uuid=..&state=active` answers with what vm-agent last put, so its
 * initial sync after a restart finds nothing to correct, as against a real VMAPI.
 */
import { MockcloudError } from '../../../src/common/errors.js';
import { isUuid } from '../../../src/common/uuid.js';
import { isObject } from './http-util.js';

interface StoredVm {
  server: string;
  state: string;
  owner: string;
  json: string;
}

/** VMAPI's `state=active`: neither destroyed nor failed. */
const INACTIVE = new Set(['destroyed', 'failed']);

export class VmapiStore {
  private readonly vms = new Map<string, StoredVm>();
  private readonly byServer = new Map<string, Set<string>>();

  get size(): number {
    return this.vms.size;
  }

  /** VMs not destroyed or failed. */
  get active(): number {
    let n = 0;
    for (const vm of this.vms.values()) if (!INACTIVE.has(vm.state)) n++;
    return n;
  }

  clear(): void {
    this.vms.clear();
    this.byServer.clear();
  }

  /** `PUT /vms/:uuid` (one VM) or one entry of `PUT /vms?server_uuid=` (serverUuid given). */
  put(uuid: string, vm: unknown, serverUuid?: string): string {
    if (!isUuid(uuid)) throw validation('uuid', `${JSON.stringify(uuid)} is not a UUID`);
    if (!isObject(vm)) throw validation('vm', `VM ${uuid} must be an object`);
    const server = typeof vm.server_uuid === 'string' ? vm.server_uuid : serverUuid;
    if (server === undefined || !isUuid(server)) throw validation('server_uuid', `VM ${uuid} has no server_uuid`);
    const json = JSON.stringify({ ...vm, uuid });
    const old = this.vms.get(uuid);
    if (old && old.server !== server) this.byServer.get(old.server)?.delete(uuid);
    this.vms.set(uuid, {
      server,
      state: typeof vm.state === 'string' ? vm.state : 'unknown',
      owner: typeof vm.owner_uuid === 'string' ? vm.owner_uuid : '',
      json,
    });
    let set = this.byServer.get(server);
    if (!set) this.byServer.set(server, (set = new Set()));
    set.add(uuid);
    return json;
  }

  /** `PUT /vms?server_uuid=` body `{vms: {uuid: vm}}`. */
  putMany(serverUuid: string | null, body: unknown): number {
    if (serverUuid === null || !isUuid(serverUuid)) throw validation('server_uuid', 'server_uuid is required and must be a UUID');
    if (!isObject(body) || !isObject(body.vms)) throw validation('vms', 'vms is required and must be an object');
    let n = 0;
    for (const [uuid, vm] of Object.entries(body.vms)) {
      this.put(uuid, vm, serverUuid);
      n++;
    }
    return n;
  }

  get(uuid: string): string {
    const vm = this.vms.get(uuid);
    if (!vm) throw new MockcloudError('ResourceNotFound', 'VM not found');
    return vm.json;
  }

  /** `GET /vms` with the filters vm-agent and operators use; a JSON array as text. */
  list(query: URLSearchParams, offset: number, limit: number): string {
    const server = query.get('server_uuid');
    const state = query.get('state');
    const owner = query.get('owner_uuid');
    if (server !== null && !isUuid(server)) throw validation('server_uuid', 'server_uuid must be a UUID');
    const ids = server !== null ? [...(this.byServer.get(server) ?? [])] : [...this.vms.keys()];
    const out: string[] = [];
    let skipped = 0;
    for (const id of ids) {
      const vm = this.vms.get(id)!;
      if (state === 'active' ? INACTIVE.has(vm.state) : state !== null && state !== 'all' && vm.state !== state) continue;
      if (owner !== null && vm.owner !== owner) continue;
      if (skipped++ < offset) continue;
      out.push(vm.json);
      if (out.length >= limit) break;
    }
    return `[${out.join(',')}]`;
  }
}

function validation(field: string, message: string): MockcloudError {
  return new MockcloudError('ValidationFailed', 'Invalid Parameters', { errors: [{ field, code: 'Invalid', message }] });
}
