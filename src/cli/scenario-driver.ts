/**
 * A scenario's work done through the daemon's control API: POST /servers for `create`, the
 * newest CNs (as delete-servers --count) or the named ones through DELETE /servers/:uuid for
 * `delete`, POST /events and POST /events/marks for events and marks, DELETE /events for the
 * undo; and what the target checks need to know of the fleet (GET /servers, GET /profiles).
 */
import { mapLimit } from '../daemon/concurrency.js';
import type { FleetView } from '../scenarios/fleet-check.js';
import type { CreateRequest, EventSource, ScenarioDriver } from '../scenarios/runner.js';
import type { EventSpec } from '../scenarios/types.js';
import type { CreateResult } from '../daemon/server-factory.js';
import { CliError, type DaemonClient } from './daemon-client.js';
import { computeNodes, listServers, newest } from './fleet-ops.js';

/** How long past its duration an event may take to end before the run stops waiting for it. */
const ENDED_WAIT_MS = 30_000;

interface ErrorBody {
  code?: string;
  message?: string;
}

/** The daemon's answer, or an Error with its message when it is not a 2xx. */
async function call<T>(daemon: DaemonClient, method: string, urlPath: string, body?: unknown): Promise<T> {
  const res = await daemon.request<T & ErrorBody>(method, urlPath, body);
  if (res.status >= 200 && res.status < 300) return res.body;
  const b = res.body as ErrorBody | undefined;
  throw new CliError(`${method} ${urlPath}: ${b?.message ?? `HTTP ${res.status}`}${b?.code ? ` (${b.code})` : ''}`);
}

export async function fleetView(daemon: DaemonClient): Promise<FleetView> {
  const servers = await listServers(daemon);
  const answer = await call<unknown>(daemon, 'GET', '/profiles');
  // A list of profiles (each with its name), or of names; or an object holding that list.
  const list: unknown[] = Array.isArray(answer) ? answer : Array.isArray((answer as { profiles?: unknown })?.profiles) ? (answer as { profiles: unknown[] }).profiles : [];
  const names = list.map((p) => (typeof p === 'string' ? p : (p as { name?: unknown })?.name)).filter((n): n is string => typeof n === 'string');
  return {
    servers: servers.map((s) => ({ uuid: s.uuid, ...(s.headnode !== undefined ? { headnode: s.headnode } : {}), ...(typeof (s as { profile?: unknown }).profile === 'string' ? { profile: (s as { profile?: string }).profile } : {}) })),
    profiles: names,
  };
}

/** The daemon's `--seed`, when it has one (GET /config). */
export async function daemonSeed(daemon: DaemonClient): Promise<string | undefined> {
  const config = await call<{ seed?: unknown }>(daemon, 'GET', '/config');
  return typeof config?.seed === 'string' && config.seed !== '' ? config.seed : undefined;
}

/** DELETE /events: every active event ends (and is undone); how many there were. */
export async function endAllEvents(daemon: DaemonClient): Promise<number> {
  const res = await call<{ ended?: unknown }>(daemon, 'DELETE', '/events');
  return typeof res?.ended === 'number' ? res.ended : 0;
}

export class ControlApiDriver implements ScenarioDriver {
  /** Set once the daemon refused a creation seed (a daemon older than seeded creation). */
  private unseededCreates = false;

  constructor(
    private readonly daemon: DaemonClient,
    private readonly warn: (line: string) => void,
  ) {}

  async create(req: CreateRequest): Promise<string> {
    const body: Record<string, unknown> = { ...req };
    if (this.unseededCreates) delete body.seed;
    let res = await this.daemon.request<CreateResult & ErrorBody>('POST', '/servers', body);
    if (res.status >= 400 && res.status < 500 && body.seed !== undefined && /unknown key.*\bseed\b/.test(res.body?.message ?? '')) {
      // A daemon without seeded creation: the CNs are made, but their identities are not replayable.
      this.unseededCreates = true;
      this.warn('this daemon does not take a seed for creating CNs: their UUIDs and MACs will not replay');
      delete body.seed;
      res = await this.daemon.request<CreateResult & ErrorBody>('POST', '/servers', body);
    }
    if (res.status < 200 || res.status >= 300) {
      throw new CliError(`POST /servers: ${res.body?.message ?? `HTTP ${res.status}`}${res.body?.code ? ` (${res.body.code})` : ''}`);
    }
    const created = res.body.created?.length ?? 0;
    const errors = res.body.errors ?? [];
    if (errors.length > 0) throw new CliError(`created ${created} of ${req.count} servers; ${errors.length} failed: ${errors[0]!.message}`);
    return `created ${created} server(s)${req.mix ? ` (mix ${req.mix})` : req.profile ? ` (profile ${req.profile})` : ''}`;
  }

  async delete(req: { count: number } | { servers: string[] }): Promise<string> {
    const uuids = 'servers' in req ? req.servers : newest(computeNodes(await listServers(this.daemon)), req.count).map((s) => s.uuid);
    const failures: string[] = [];
    await mapLimit(uuids, 16, async (uuid) => {
      const res = await this.daemon.request<ErrorBody>('DELETE', `/servers/${uuid}`);
      if (res.status < 200 || res.status >= 300) failures.push(`${uuid}: ${res.body?.message ?? `HTTP ${res.status}`}`);
    });
    if (failures.length > 0) throw new CliError(`deleted ${uuids.length - failures.length} of ${uuids.length} servers; ${failures[0]}`);
    return `deleted ${uuids.length} server(s)`;
  }

  async event(body: EventSpec & { seed: string; source: EventSource }): Promise<string | { account: string; id: string }> {
    const res = await this.daemon.request<{ id?: string; servers?: string[] } & ErrorBody>('POST', '/events', body);
    // Nothing to act on at this moment (a crash storm's draw of CNs with no running VM): the
    // file was checked, so this is the fleet's state, not a mistake; the run goes on.
    if (res.status === 422 && res.body?.code === 'NoMatchingServers') return `event ${body.type} matched nothing now: ${res.body.message ?? 'no matching server'}`;
    if (res.status < 200 || res.status >= 300) {
      throw new CliError(`POST /events: ${res.body?.message ?? `HTTP ${res.status}`}${res.body?.code ? ` (${res.body.code})` : ''}`);
    }
    const n = Array.isArray(res.body?.servers) ? res.body.servers.length : 0;
    const account = `event ${body.type} on ${n} server(s)${res.body?.id ? ` (id ${res.body.id})` : ''}`;
    return typeof res.body?.id === 'string' ? { account, id: res.body.id } : account;
  }

  /** Poll GET /events until none of `ids` is active; bounded: the daemon ends them within a tick or two. */
  async ended(ids: readonly string[], signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + ENDED_WAIT_MS;
    for (;;) {
      const list = await call<{ active?: { id?: string }[] }>(this.daemon, 'GET', '/events');
      const active = new Set((list?.active ?? []).map((e) => e.id));
      if (!ids.some((id) => active.has(id))) return;
      if (Date.now() > deadline || signal?.aborted) {
        this.warn(`${ids.filter((id) => active.has(id)).length} event(s) of the run are still active ${ENDED_WAIT_MS / 1000} s after their duration`);
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async mark(label: string, source: EventSource): Promise<string> {
    await call(this.daemon, 'POST', '/events/marks', { label, source });
    return `mark ${JSON.stringify(label)}`;
  }
}
