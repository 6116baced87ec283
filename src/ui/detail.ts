/**
 * One CN as the page's side panel shows it: its sysinfo and address, its VMs and their states,
 * its recent tasks (cn-agent's history) with durations and errors, and the events applied to
 * it (the active ones, and the last ones of `<data-dir>/events.jsonl`).
 */
import { promises as fsp } from 'node:fs';
import type { HistoryEntry } from '../agents/cn-agent/history.js';
import { MockcloudError } from '../common/errors.js';
import type { EventLogRecord } from '../events/types.js';
import { adminNicOf } from '../mockcn/sysinfo-file.js';
import { CELL_STATES, cellState, lateAfterMs, type FleetSource } from './source.js';

/** How much of the end of events.jsonl a detail reads: enough for the recent events, bounded. */
const EVENT_LOG_TAIL_BYTES = 256 * 1024;
const EVENT_LOG_ENTRIES = 30;

export async function serverDetail(source: FleetSource, uuid: string): Promise<Record<string, unknown>> {
  const cn = source.get(uuid);
  if (!cn) throw new MockcloudError('ResourceNotFound', `server ${uuid} not found`);
  const now = Date.now();
  const active = source.activeEvents().filter((ev) => ev.servers.includes(cn.uuid));
  const lastHb = source.lastHeartbeatAt(cn.uuid);
  const booting = cn.power === 'down' && source.booting?.(cn.uuid) === true;
  const state = cellState(cn, source.faultState(cn.uuid), lastHb, now, lateAfterMs(source.heartbeatIntervalMs), source.heartbeats, booting);
  return {
    uuid: cn.uuid,
    hostname: cn.hostname,
    profile: cn.profile,
    state: CELL_STATES[state],
    power: cn.power,
    registered: cn.registered,
    draining: cn.draining,
    heartbeatAgeMs: lastHb === undefined ? null : now - lastHb,
    adminIp: adminNicOf(cn.sysinfo).ip ?? null,
    agentAddress: cn.agentAddress ?? null,
    conditions: cn.conditions ?? null,
    agents: source.agentFacts?.(cn.uuid) ?? {},
    boot: source.boot?.(cn.uuid) ?? null,
    vms: cn.vms.list({ include_dni: true }).map((vm) => ({
      uuid: vm.uuid,
      alias: (vm as { alias?: string }).alias ?? null,
      brand: vm.brand,
      state: vm.state,
      ram: (vm as { max_physical_memory?: number }).max_physical_memory ?? null,
    })),
    tasks: [...(source.taskHistory(cn.uuid) ?? [])].reverse().map((t) => taskView(t, now)),
    events: { active, recent: await recentEvents(source.eventLogPath, cn.uuid) },
    sysinfo: cn.sysinfo,
  };
}

function taskView(t: HistoryEntry, now: number): Record<string, unknown> {
  const start = Date.parse(t.started_at);
  const end = t.finished_at ? Date.parse(t.finished_at) : now;
  const errors: string[] = [];
  for (const m of t.messages) {
    if (m.type === 'exception') errors.push(m.error.message);
    else if (m.type === 'event' && m.name === 'error') {
      const e = (m.event as { error?: unknown } | undefined)?.error;
      errors.push(typeof e === 'string' ? e : JSON.stringify(e ?? m.event));
    }
  }
  return { task: t.task, status: t.status, startedAt: t.started_at, finishedAt: t.finished_at ?? null, durationMs: end - start, errorCount: t.errorCount, errors };
}

/** The last events.jsonl records naming this server, newest first. */
async function recentEvents(file: string, uuid: string): Promise<EventLogRecord[]> {
  let text: string;
  try {
    const fh = await fsp.open(file, 'r');
    try {
      const { size } = await fh.stat();
      const start = Math.max(0, size - EVENT_LOG_TAIL_BYTES);
      const buf = Buffer.alloc(size - start);
      await fh.read(buf, 0, buf.length, start);
      text = buf.toString('utf8');
      // A cut first line is not a record.
      if (start > 0) text = text.slice(text.indexOf('\n') + 1);
    } finally {
      await fh.close();
    }
  } catch {
    return [];
  }
  const out: EventLogRecord[] = [];
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0 && out.length < EVENT_LOG_ENTRIES; i--) {
    const line = lines[i]!;
    if (!line.includes(uuid)) continue;
    try {
      const rec = JSON.parse(line) as EventLogRecord;
      if (rec.servers?.includes(uuid)) out.push(rec);
    } catch {
      // a line being written
    }
  }
  return out;
}
