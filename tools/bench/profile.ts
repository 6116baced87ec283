/**
 * Where the idle daemon's time and memory go, through the V8 inspector (the daemon runs with
 * `--inspect=127.0.0.1:0`): a CPU profile over a chosen window (steady state only, not start-up),
 * summarised by self time per function and per file, and a heap snapshot summarised by
 * constructor. Both files are saved for Chrome DevTools.
 */
import { writeFile } from 'node:fs/promises';
import WebSocket from 'ws';
import type { HeapSummary, ProfileSummary } from './types.js';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

const CALL_TIMEOUT_MS = 120_000;

/** A minimal Chrome DevTools Protocol session over the inspector's websocket. */
export class InspectorSession {
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly handlers = new Map<string, (params: unknown) => void>();

  private constructor(private readonly ws: WebSocket) {
    // The daemon may go away under an open session (it is being stopped): pending calls time out.
    ws.on('error', () => undefined);
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data)) as { id?: number; method?: string; params?: unknown; result?: unknown; error?: { message: string } };
      if (msg.id === undefined) {
        if (msg.method) this.handlers.get(msg.method)?.(msg.params);
        return;
      }
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg.result);
    });
  }

  static async connect(wsUrl: string): Promise<InspectorSession> {
    const ws = new WebSocket(wsUrl, { perMessageDeflate: false, maxPayload: 1024 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new InspectorSession(ws);
  }

  on(method: string, fn: (params: unknown) => void): void {
    this.handlers.set(method, fn);
  }

  call<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    return new Promise((resolve, reject) => {
      const id = ++this.seq;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`inspector ${method} timed out`));
      }, CALL_TIMEOUT_MS);
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close(): void {
    for (const p of this.pending.values()) clearTimeout(p.timer);
    this.pending.clear();
    this.ws.terminate();
  }
}

/** Start the CPU profiler (1 ms sampling). */
export async function startProfile(session: InspectorSession): Promise<void> {
  await session.call('Profiler.enable');
  await session.call('Profiler.setSamplingInterval', { interval: 1000 });
  await session.call('Profiler.start');
}

/** Stop the CPU profiler, save the profile, summarise it. */
export async function stopProfile(session: InspectorSession, phase: string, saveAs: string): Promise<ProfileSummary> {
  const { profile } = await session.call<{ profile: CpuProfile }>('Profiler.stop');
  await session.call('Profiler.disable');
  await writeFile(saveAs, JSON.stringify(profile));
  return { phase, file: saveAs, ...summarizeProfile(profile) };
}

/** Take a heap snapshot (after a full GC), save it, and summarise it by constructor. */
export async function heapSnapshot(session: InspectorSession, saveAs: string): Promise<HeapSummary> {
  const chunks: string[] = [];
  session.on('HeapProfiler.addHeapSnapshotChunk', (p) => chunks.push((p as { chunk: string }).chunk));
  await session.call('HeapProfiler.enable');
  await session.call('HeapProfiler.collectGarbage');
  await session.call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  await session.call('HeapProfiler.disable');
  const text = chunks.join('');
  chunks.length = 0;
  await writeFile(saveAs, text);
  return { file: saveAs, ...summarizeHeapSnapshot(JSON.parse(text) as HeapSnapshot) };
}

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size by kind: objects by constructor name, everything else by V8 node type. */
export function summarizeHeapSnapshot(snap: HeapSnapshot, topN = 15): Omit<HeapSummary, 'file'> {
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const iType = fields.indexOf('type');
  const iName = fields.indexOf('name');
  const iSize = fields.indexOf('self_size');
  const by = new Map<string, { bytes: number; count: number }>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]!] ?? 'unknown';
    const size = snap.nodes[i + iSize]!;
    total += size;
    const name = snap.strings[snap.nodes[i + iName]!] || '(anonymous)';
    const key = type === 'object' ? name : type === 'closure' ? `${name} (closure)` : `(${type})`;
    const e = by.get(key) ?? { bytes: 0, count: 0 };
    e.bytes += size;
    e.count++;
    by.set(key, e);
  }
  const top = [...by.entries()]
    .sort((a, b) => b[1].bytes - a[1].bytes)
    .slice(0, topN)
    .map(([kind, e]) => ({ kind, bytes: e.bytes, count: e.count }));
  return { totalBytes: total, top };
}

/**
 * Self time per function (name + file:line) and per file, largest first, as shares of the busy
 * time: V8's `(idle)` samples are left out of the shares and reported as the busy fraction.
 */
export function summarizeProfile(profile: CpuProfile, topN = 15): Omit<ProfileSummary, 'file' | 'phase'> {
  const hits = new Map<number, number>();
  if (profile.samples && profile.samples.length > 0) {
    for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  } else {
    for (const n of profile.nodes) hits.set(n.id, n.hitCount ?? 0);
  }
  let total = 0;
  let busy = 0;
  const byFn = new Map<string, { fn: string; where: string; hits: number }>();
  const byFile = new Map<string, number>();
  for (const n of profile.nodes) {
    const h = hits.get(n.id) ?? 0;
    if (h === 0) continue;
    total += h;
    const fn = n.callFrame.functionName || '(anonymous)';
    if (fn === '(idle)') continue;
    busy += h;
    const file = n.callFrame.url ? shortUrl(n.callFrame.url) : fn;
    const where = n.callFrame.url ? `${file}:${n.callFrame.lineNumber + 1}` : '';
    const key = `${fn}@${where}`;
    const e = byFn.get(key) ?? { fn, where, hits: 0 };
    e.hits += h;
    byFn.set(key, e);
    byFile.set(file, (byFile.get(file) ?? 0) + h);
  }
  const share = (h: number): number => (busy > 0 ? Math.round((h / busy) * 1000) / 10 : 0);
  const top = [...byFn.values()]
    .sort((a, b) => b.hits - a.hits)
    .slice(0, topN)
    .map((e) => ({ fn: e.fn, where: e.where, selfPercent: share(e.hits) }));
  const files = [...byFile.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([file, h]) => ({ file, selfPercent: share(h) }));
  return {
    top,
    files,
    busyPercent: total > 0 ? Math.round((busy / total) * 1000) / 10 : 0,
    totalMs: Math.round((profile.endTime - profile.startTime) / 1000),
  };
}

function shortUrl(url: string): string {
  const i = url.indexOf('/dist/');
  if (i >= 0) return url.slice(i + 1);
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + 1);
  return url.replace(/^file:\/\//, '');
}
