/**
 * The daemon's side of booting (src/boot): which booter the CNs' relay talks to (the configured
 * one, the dev headnode's, or none), the boot service built on it, a new CN's first boot, and
 * what `mockcloud status` and `mockcloud boot-report` (GET /boots) show of the boots.
 */
import { autobootGapMs, bootTimingOf } from '../mockcn/power-cycle.js';
import type { Timing } from '../timing/timing.js';
import { BootService } from '../boot/boot-service.js';
import { bootView, summarize, type BootRecord } from '../boot/records.js';
import { DhcpRelay } from '../boot/relay.js';
import { resolveBootTimings } from '../boot/timings.js';
import { MockcloudError } from '../common/errors.js';
import type { JsonHttpClient } from '../common/http-client.js';
import type { Logger } from '../common/log.js';
import { isUuid } from '../common/uuid.js';
import type { Headnode } from '../headnode/index.js';
import type { BootCause, MockCn } from '../mockcn/types.js';
import type { Scheduler } from '../runtime/scheduler.js';
import type { DaemonConfig } from './config.js';

export interface BootWiring {
  service: BootService;
  relay: DhcpRelay | undefined;
}

/** The causes whose boot takes the kernel's time (--boot-seconds) until the timing model says more. */
const FULL_BOOTS: readonly BootCause[] = ['reboot', 'power-loss'];

export async function startBootService(o: {
  config: DaemonConfig;
  headnode: Headnode | undefined;
  scheduler: Scheduler;
  http: JsonHttpClient;
  log: Logger;
  /** The relay's option 82 remote id: this daemon. */
  remoteId: string;
  /** A CN's kernel boot time is the timing's `cn.boot` unless --boot-seconds says it (docs/timing.md). */
  timing?: Timing;
}): Promise<BootWiring> {
  const { config, headnode } = o;
  const devBooter = config.booter === undefined ? headnode?.booterAddresses : undefined;
  const booter = config.booter === 'none' ? undefined : (config.booter ?? devBooter?.dhcp);
  const booterHttpUrl = config.booterHttpUrl ?? devBooter?.http;
  const log = o.log.child({ component: 'boot' });
  let relay: DhcpRelay | undefined;
  if (booter) {
    relay = new DhcpRelay({
      booter,
      bindIp: config.bindIp,
      remoteId: o.remoteId,
      ...(config.bootRack ? { circuitId: config.bootRack } : {}),
      log,
    });
    await relay.start();
    log.info({ booter, booterHttpUrl, relay: relay.address, rack: config.bootRack }, 'mock CNs boot from booter');
  }
  const service = new BootService({
    scheduler: o.scheduler,
    http: o.http,
    log,
    timings: resolveBootTimings(config.bootTimings),
    ...(relay ? { relay } : {}),
    ...(relay && booterHttpUrl ? { booterHttpUrl } : {}),
    ...(config.urls.cnapi ? { cnapiUrl: config.urls.cnapi } : {}),
    kernelMs: (cause, cn) => (FULL_BOOTS.includes(cause) ? bootTimingOf(cn, o.timing, config.bootSeconds).bootMs : 0),
    autobootGapMs: (cn) => autobootGapMs(cn, o.timing),
  });
  return { service, relay };
}

/**
 * A new CN's first boot, awaited for at most one DHCP round and a boot file's wait: a booter
 * that does not answer leaves the CN created and booting (it keeps trying), not the request
 * hanging.
 */
export function firstBoot(w: BootWiring, scheduler: Scheduler, cn: MockCn): Promise<void> {
  const t = w.service.timings;
  const boundMs = t.dhcpTimeoutsMs.reduce((a, b) => a + b, 0) + t.fetchTimeoutMs;
  let job: ReturnType<Scheduler['schedule']> | undefined;
  const bound = new Promise<void>((resolve) => (job = scheduler.schedule(boundMs, resolve)));
  const boot = w.service.powerOn(cn, 'create');
  return Promise.race([boot.catch(() => undefined), bound]).finally(() => scheduler.cancel(job));
}

/** `mockcloud status`: where the CNs boot from and which path each CN's last boot took. */
export function bootStatus(w: BootWiring | undefined, fleet: readonly MockCn[]): Record<string, unknown> {
  if (!w) return { booter: null };
  const paths = { booter: 0, direct: 0, notBooted: 0 };
  let booting = 0;
  for (const cn of fleet) {
    const r = w.service.records.get(cn.uuid);
    if (!r) paths.notBooted++;
    else paths[r.path]++;
    if (r && r.upAt === undefined && r.phase !== 'abandoned') booting++;
  }
  return {
    booter: w.service.booter ?? null,
    /** Each CN's last boot this run: through booter, direct (no booter, a headnode), or none yet (loaded running). */
    paths,
    booting,
    ...(w.relay ? { dhcp: { ...w.relay.counts, unused: { ...w.relay.counts.unused } } } : {}),
  };
}

/**
 * GET /boots: each CN's last boot and the summary of them (a storm). `event` keeps the boots
 * that event caused, `servers` those CNs; `since` (ISO time) the boots begun since.
 */
export function bootReport(w: BootWiring | undefined, fleet: readonly MockCn[], query: URLSearchParams): Record<string, unknown> {
  if (!w) throw new MockcloudError('ServiceUnavailable', 'the daemon is not running');
  const hosted = new Map(fleet.map((cn) => [cn.uuid, cn]));
  let records: BootRecord[] = w.service.records.list().filter((r) => hosted.has(r.uuid));
  const event = query.get('event');
  if (event !== null) records = records.filter((r) => r.eventId === event);
  const servers = query.get('servers');
  if (servers !== null) {
    const wanted = new Set(servers.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean));
    const bad = [...wanted].find((s) => !isUuid(s));
    if (bad) throw new MockcloudError('InvalidArgument', `servers: ${JSON.stringify(bad)} is not a server UUID`);
    records = records.filter((r) => wanted.has(r.uuid));
  }
  const since = query.get('since');
  if (since !== null) {
    const t = Date.parse(since);
    if (!Number.isFinite(t)) throw new MockcloudError('InvalidArgument', `since: ${JSON.stringify(since)} is not an ISO time`);
    records = records.filter((r) => r.startedAt >= t);
  }
  records.sort((a, b) => a.startedAt - b.startedAt || (a.uuid < b.uuid ? -1 : 1));
  return {
    booter: w.service.booter ?? null,
    summary: summarize(records),
    servers: records.map((r) => ({ ...bootView(r), hostname: hostname(hosted.get(r.uuid)) })),
  };
}

function hostname(cn: MockCn | undefined): string | null {
  const h = cn?.sysinfo.Hostname;
  return typeof h === 'string' ? h : null;
}
