/**
 * Fault events: task-fault (cn-agent tasks of the targets delayed, failed or hung, through
 * cn-agent's fault seam, src/agents/cn-agent/faults.ts) and outbound-fault (a fraction of the
 * targets' requests to CNAPI, VMAPI or NAPI delayed or failed, through NetworkFaults). Each
 * event draws its decisions from its own seeded stream.
 */
import { MockcloudError } from '../../common/errors.js';
import { BUILTIN_PROFILES } from '../../timing/builtin.js';
import type { OutboundRule } from '../network.js';
import type { Applied, EventContext } from './context.js';

export async function taskFault(ctx: EventContext<'task-fault'>): Promise<Applied> {
  const seam = ctx.host.taskFaults;
  if (!seam) throw new MockcloudError('ServiceUnavailable', "this daemon's cn-agent has no fault injection");
  const p = ctx.req.params;
  const random = ctx.eventRandom('faults');
  // The hang's end: the event's own signal (it aborts when the event ends).
  const id = seam.addEventRule({
    event: ctx.id,
    servers: new Set(ctx.servers.map((cn) => cn.uuid)),
    ...(p.task !== undefined ? { task: p.task } : {}),
    ...(p.delayMs !== undefined ? { delayMs: p.delayMs } : {}),
    ...(p.error !== undefined ? { error: p.error } : {}),
    ...(p.probability !== undefined ? { probability: p.probability } : {}),
    ...(p.hang ? { hang: ctx.signal } : {}),
    random: () => random.next(),
  });
  return { undo: () => void seam.remove(id) };
}

export async function outboundFault(ctx: EventContext<'outbound-fault'>): Promise<Applied> {
  const p = ctx.req.params;
  const random = ctx.eventRandom('outbound-faults');
  const rule: OutboundRule = {
    servers: new Set(ctx.servers.map((cn) => cn.uuid)),
    ...(p.api !== undefined ? { api: p.api } : {}),
    delayMs: p.delayMs ?? 0,
    errorRate: p.errorRate ?? 0,
    probability: p.probability ?? 1,
    random: () => random.next(),
    hits: 0,
  };
  ctx.network.addRule(rule);
  return { undo: () => ctx.network.removeRule(rule) };
}

/** A while of other timing on the targets (or some of their VMs): Timing.adjust until the end. */
export async function timingEvent(ctx: EventContext<'timing'>): Promise<Applied> {
  const timing = ctx.host.timing;
  if (!timing) throw new MockcloudError('ServiceUnavailable', 'this daemon has no timing to adjust');
  const p = ctx.req.params;
  const profile = p.profile !== undefined ? BUILTIN_PROFILES.get(p.profile) : undefined;
  const undo = timing.adjust({
    servers: new Set(ctx.servers.map((cn) => cn.uuid)),
    ...(p.vms ? { vms: new Set(p.vms) } : {}),
    ...(p.keys ? { keys: p.keys } : {}),
    ...(p.factor !== undefined ? { factor: p.factor } : {}),
    ...(profile ? { profile } : {}),
  });
  if (p.vms) ctx.vms.push(...p.vms);
  return { undo };
}
