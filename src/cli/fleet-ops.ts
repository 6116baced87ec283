/**
 * What create-servers, ensure-servers and delete-servers do through the daemon's control API,
 * shared so each command is only its arguments and its output.
 */
import type { CreatedServer, CreateResult } from '../daemon/server-factory.js';
import type { RemoveResult } from '../daemon/server-removal.js';
import { mapLimit } from '../daemon/concurrency.js';
import { batchMixes, formatMix, type Mix } from '../daemon/fleet-mix.js';
import type { Placement } from '../mockcn/profiles.js';
import { scanServers } from '../mockcn/server-dir.js';
import { CliError, UsageError, type DaemonClient } from './daemon-client.js';
import type { Progress } from './options.js';

/** One CN as the control API's GET /servers lists it. */
export interface ServerSummary {
  uuid: string;
  hostname: string;
  adminIp: string | null;
  agentAddress: { ip: string; port: number } | null;
  registered: boolean;
  vms: number;
  createdAt: number | null;
  /** The dev DC's headnode server (absent from older daemons: false). */
  headnode?: boolean;
  /** The hardware profile it was made with (absent from older daemons). */
  profile?: string;
  /** Seconds since config-agent's last complete check of the CN with SAPI (null: none yet; absent: no config-agent). */
  configAgeSeconds?: number | null;
  /** That check is overdue (more than the agent's longest wait and a request's deadline). */
  configStale?: boolean;
}

/**
 * The compute nodes of a listing: every CN but the dev DC's headnode server, which
 * ensure-servers does not count and delete-servers --all / --count never delete.
 */
export function computeNodes(list: ServerSummary[]): ServerSummary[] {
  return list.filter((s) => s.headnode !== true);
}

/** Removed CNs the daemon still has to clean up in Triton (kept as "deleting"). */
export async function deletingServers(daemon: DaemonClient): Promise<string[]> {
  const status = await daemon.call<{ deletingServers?: unknown }>('GET', '/status');
  return Array.isArray(status.deletingServers) ? status.deletingServers.filter((u): u is string => typeof u === 'string') : [];
}

export async function listServers(daemon: DaemonClient): Promise<ServerSummary[]> {
  const list = await daemon.call<ServerSummary[]>('GET', '/servers');
  if (!Array.isArray(list)) throw new CliError('the daemon answered GET /servers with something that is not a list');
  return list;
}

export interface CreateOptions {
  profile?: string;
  /** A weighted mix: the run's exact counts are split over the batches (fleet-mix.ts). */
  mix?: Mix;
  seed?: string;
  placement?: Placement;
  hostnamePrefix?: string;
}

/**
 * Create `count` CNs in batches (the daemon creates each batch with bounded parallelism), with
 * progress. A 4xx (bad profile, ...) stops at once: every batch would fail alike. An interrupted
 * run leaves only whole CNs: the daemon creates each one atomically and cleans up at its next
 * start what a crash interrupted.
 */
export async function createServers(daemon: DaemonClient, count: number, opts: CreateOptions, progress: Progress): Promise<CreateResult> {
  if (opts.mix) await checkMixProfiles(daemon, opts.mix);
  const run: CreateRun = { daemon, count, opts, progress, all: { created: [], errors: [] }, before: 0, inFlight: 0 };
  run.before = await serversOnDisk(daemon);
  progress.start('created', count);
  // Ctrl-C of the CLI: the batch in flight is the daemon's to finish (each CN whole or not at
  // all); say how many exist so far, and send no more batches.
  const onInterrupt = (signal: NodeJS.Signals): void => {
    progress.stop();
    void serversOnDisk(daemon)
      .catch(() => run.before + run.all.created.length)
      .then((n) => {
        process.stderr.write(
          `mockcloud: interrupted: created ${n - run.before} of ${count} servers so far; the daemon finishes the batch in flight ` +
            `(up to ${run.inFlight} more); run \`mockcloud ensure-servers\` to converge\n`,
        );
        process.exit(signal === 'SIGINT' ? 130 : 143);
      });
  };
  process.once('SIGINT', onInterrupt);
  process.once('SIGTERM', onInterrupt);
  try {
    await createInBatches(run);
  } finally {
    process.off('SIGINT', onInterrupt);
    process.off('SIGTERM', onInterrupt);
    progress.stop();
  }
  return run.all;
}

/**
 * Every profile a mix names must exist before anything is created: a batch is sent only the
 * profiles drawn for it, so an unknown one with a small weight could go unnoticed (or stop the
 * run halfway).
 */
async function checkMixProfiles(daemon: DaemonClient, mix: Mix): Promise<void> {
  const profiles = await daemon.call<{ name: string }[]>('GET', '/profiles');
  if (!Array.isArray(profiles)) return; // an older daemon: it checks each batch's own
  const known = profiles.map((p) => p.name);
  const unknown = mix.map(([name]) => name).filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new UsageError(
      `--mix: ${unknown.length > 1 ? 'no profiles' : 'no profile'} ${unknown.map((n) => JSON.stringify(n)).join(', ')} in this daemon; ` +
        `its profiles: ${known.join(', ')}; nothing was created`,
    );
  }
}

interface CreateRun {
  daemon: DaemonClient;
  count: number;
  opts: CreateOptions;
  progress: Progress;
  all: CreateResult;
  /** CNs on disk before the run. */
  before: number;
  /** CNs asked for in the batch in flight. */
  inFlight: number;
}

/** CNs in the data dir (each is made whole or not at all). */
async function serversOnDisk(daemon: DaemonClient): Promise<number> {
  return (await scanServers(daemon.info.dataDir)).servers.length;
}

async function createInBatches(run: CreateRun): Promise<void> {
  const { daemon, count, opts, progress, all } = run;
  const batch = Math.min(500, Math.max(32, Math.ceil(count / 20)));
  const sizes: number[] = [];
  for (let left = count; left > 0; left -= batch) sizes.push(Math.min(batch, left));
  const mixes = opts.mix ? batchMixes(count, opts.mix, sizes) : [];
  for (let done = 0, b = 0; done < count; b++) {
    const n = sizes[b]!;
    const body: Record<string, unknown> = { count: n };
    if (opts.profile !== undefined) body.profile = opts.profile;
    if (mixes[b]) body.mix = formatMix(mixes[b]);
    if (opts.seed !== undefined) body.seed = opts.seed;
    if (opts.placement !== undefined) body.placement = opts.placement;
    if (opts.hostnamePrefix !== undefined) body.hostnamePrefix = opts.hostnamePrefix;
    let res;
    run.inFlight = n;
    try {
      res = await daemon.request<CreateResult & { code?: string; message?: string }>('POST', '/servers', body);
    } catch (err) {
      // The daemon went away mid-batch: the CNs it finished are on disk, so count them there
      // rather than report only the batches it answered.
      progress.stop();
      const made = (await serversOnDisk(daemon).catch(() => run.before + all.created.length)) - run.before;
      throw new CliError(
        `${(err as Error).message}\ncreated ${made} of ${count} servers before the daemon went away ` +
          `(${all.created.length} confirmed by it); restart the daemon and run \`mockcloud ensure-servers\` to converge`,
      );
    }
    if (res.status >= 400 && res.status < 500) throw new CliError(res.body?.message ?? `the daemon refused: HTTP ${res.status}`);
    if (Array.isArray(res.body?.created)) all.created.push(...res.body.created);
    if (Array.isArray(res.body?.errors)) all.errors.push(...res.body.errors);
    else if (res.status >= 300) all.errors.push({ code: res.body?.code ?? String(res.status), message: res.body?.message ?? `HTTP ${res.status}` });
    done += n;
    progress.update(all.created.length, all.errors.length);
    if (all.created.length === 0 && all.errors.length >= n) break; // nothing works; stop early
  }
}

export interface DeleteOutcome {
  deleted: RemoveResult[];
  errors: { uuid: string; message: string }[];
  /** With `goneIsDone`: CNs the daemon no longer had (another command removed them meanwhile). */
  gone: string[];
}

/**
 * Delete CNs, with progress. Several at once: each is a few Triton calls the daemon waits
 * on (as many as create-servers creates at once).
 */
export async function deleteServers(daemon: DaemonClient, uuids: string[], progress: Progress, opts: { goneIsDone?: boolean } = {}): Promise<DeleteOutcome> {
  const out: DeleteOutcome = { deleted: [], errors: [], gone: [] };
  progress.start('deleted', uuids.length);
  await mapLimit(uuids, 16, async (uuid) => {
    const res = await daemon.request<RemoveResult & { code?: string; message?: string }>('DELETE', `/servers/${uuid}`);
    if (res.status >= 200 && res.status < 300 && res.body) out.deleted.push({ ...res.body, warnings: res.body.warnings ?? [], vms: res.body.vms ?? [] });
    // A command that converges on a count wants the CN gone: one already gone is no failure.
    else if (opts.goneIsDone && res.status === 404) out.gone.push(uuid);
    else out.errors.push({ uuid, message: res.body?.message ?? `HTTP ${res.status}` });
    progress.update(out.deleted.length, out.errors.length);
  });
  progress.stop();
  return out;
}

/** The `n` newest CNs (latest "Zpool Creation" first; uuid order breaks ties, so runs agree). */
export function newest(list: ServerSummary[], n: number): ServerSummary[] {
  return [...list]
    .sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0) || (a.uuid < b.uuid ? 1 : a.uuid > b.uuid ? -1 : 0))
    .slice(0, Math.max(0, n));
}

export function printCreated(created: CreatedServer[]): void {
  for (const s of created) {
    const addr = s.agentAddress ? `${s.agentAddress.ip}:${s.agentAddress.port}` : '-';
    process.stdout.write(`${s.uuid}  ${s.hostname}  ${s.profile}  admin ${s.adminIp || '-'}  cn-agent ${addr}\n`);
  }
}

/** Failures grouped by message on stderr; sets a non-zero exit code when there are any. */
export function reportErrors(verb: string, errors: { message: string }[]): void {
  if (errors.length === 0) return;
  const kinds = new Map<string, number>();
  for (const e of errors) kinds.set(e.message, (kinds.get(e.message) ?? 0) + 1);
  for (const [message, n] of kinds) process.stderr.write(`mockcloud: ${n} server(s) failed to ${verb}: ${message}\n`);
  process.exitCode = 1;
}
