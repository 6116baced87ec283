/**
 * What `npm run drill` (drill.ts) measures, as tools/bench/results/drill.json holds it, and its
 * section of docs/performance.md.
 */
import path from 'node:path';
import { fmt, fmtN } from './figures.js';
import { PROJECT_ROOT } from './paths.js';
import type { LatencySummary } from './stats.js';

export const DEFAULT_DRILL_JSON = path.join(PROJECT_ROOT, 'tools', 'bench', 'results', 'drill.json');

export interface FloodFigures {
  cns: number;
  socketsAsked: { cn: number; control: number };
  /** The most flood sockets this process held open at once. */
  socketsHeldMax: number;
  /** Flood sockets the daemon closed (and this process opened again). */
  closedByDaemon: number;
  seconds: number;
  tasks: LatencySummary & { failed: number; failures: string[] };
  /** `GET /status` on the flooded TCP port (a script's way in) and on the control socket (the CLI's). */
  status: LatencySummary & { failed: number; failures: string[] };
  cliStatus: LatencySummary & { failed: number; failures: string[] };
  worstHeartbeatGapMs: number;
  silentCns: number;
  /** The daemon's connection counts after the flood (cn-agent's guard). */
  cnAgentConnections: unknown;
  capWarnings: number;
  daemonRssBytes: number;
}

export interface BurstFigures {
  tasks: number;
  answered: number;
  refused: number;
  failed: number;
  p99Ms: number;
  worstHeartbeatGapMs: number;
}

export interface ChurnFigures {
  rounds: number;
  count: number;
  other: number;
  seconds: number;
  /** Exit codes of the two loops' ensure-servers runs (1: the other loop moved the count meanwhile). */
  exitCodes: number[];
  /** Each kind of last line of a failed command's stderr (its numbers as N), with its count ("3× ensure-servers 0: ..."). */
  failures: string[];
  cnsAfter: number;
  napiNicsWithoutCn: number;
  sapiInstancesWithoutCn: number;
  examples: string[];
}

export interface DrillReport {
  version: 1;
  startedAt: string;
  finishedAt: string;
  /**
   * The machine, shared with other work: its load averages (1, 5, 15 min, as `uptime` says them)
   * when the drill started and when it finished.
   */
  host: { cpus: number; node: string; fdLimit: string; load?: { start: number[]; end: number[] } };
  options: Record<string, unknown>;
  flood?: FloodFigures;
  burst?: BurstFigures;
  churn?: ChurnFigures;
}

const secs = (ms: number): string => `${fmt(ms / 1000, 2)} s`;

/** The commands that exited non-zero and why: two loops asking for different counts at once contradict each other. */
function churnExits(c: ChurnFigures): string {
  const failed = c.exitCodes.filter((x) => x !== 0).length;
  if (failed === 0) return '';
  return `; ${failed} of ${c.exitCodes.length} \`ensure-servers\` exited 1${c.failures?.length ? `: ${c.failures.map((f) => f.replace(/\|/g, '\\|')).join('; ')}` : ''}`;
}
const loadOf = (l: number[]): string => l.map((x) => x.toFixed(2)).join(', ');

/** The drill's section of docs/performance.md, judged against issue 24's targets. */
export function renderDrill(d: DrillReport): string[] {
  const out: string[] = ['## Reliability drills (issue 24)', ''];
  out.push(
    `_\`npm run drill\` (tools/bench/drill.ts) on ${d.finishedAt.slice(0, 10)}: ${d.host.cpus} CPUs, Node ${d.host.node}, ` +
      `descriptor limit ${d.host.fdLimit}` +
      (d.host.load ? `; load average (1, 5, 15 min) ${loadOf(d.host.load.start)} at the start, ${loadOf(d.host.load.end)} at the end (a shared machine)` : '') +
      `. Raw figures: tools/bench/results/drill.json._`,
    '',
  );
  out.push('| drill | target | measured | verdict |', '|---|---|---|---|');
  const verdict = (ok: boolean): string => (ok ? '✅ met' : '❌ missed');
  const f = d.flood;
  if (f) {
    const idle = `${fmtN(f.socketsAsked.cn)} idle sockets to ${fmtN(f.cns)} CNs' ports and ${fmtN(f.socketsAsked.control)} to the control API (reopened when closed), ${fmt(f.seconds, 0)} s`;
    out.push(
      `| flood: tasks to every CN | ${idle}: answered, p99 < 1 s | ${fmtN(f.tasks.count)} answered, ${f.tasks.failed} failed; p99 ${fmt(f.tasks.p99Ms, 0)} ms (p50 ${fmt(f.tasks.p50Ms, 0)}) | ${verdict(f.tasks.failed === 0 && f.tasks.p99Ms < 1000)} |`,
      `| flood: \`/status\` on the TCP port | answered, p99 < 1 s | ${f.status.count} answered, ${f.status.failed} failed; p99 ${fmt(f.status.p99Ms, 0)} ms | ${verdict(f.status.failed === 0 && f.status.p99Ms < 1000)} |`,
      `| flood: \`/status\` on the CLI's socket | answered, p99 < 1 s | ${f.cliStatus.count} answered, ${f.cliStatus.failed} failed; p99 ${fmt(f.cliStatus.p99Ms, 0)} ms | ${verdict(f.cliStatus.failed === 0 && f.cliStatus.p99Ms < 1000)} |`,
      `| flood: heartbeats | worst gap ≤ 6 s | ${secs(f.worstHeartbeatGapMs)} (${f.silentCns} CNs silent) | ${verdict(f.worstHeartbeatGapMs <= 6000 && f.silentCns === 0)} |`,
      `| flood: caps reported | a WARN at most once a minute per listener | ${f.capWarnings} WARN line(s); ${fmtN(f.closedByDaemon)} flood sockets closed by the daemon (and reopened) | ${verdict(f.capWarnings > 0 && f.capWarnings <= 2 * Math.ceil(f.seconds / 60))} |`,
    );
  }
  const b = d.burst;
  if (b) {
    out.push(
      `| burst after the flood | ${fmtN(b.tasks)} nop tasks at once: heartbeat gap ≤ 6 s | ${fmtN(b.answered)} answered, ${b.refused} refused (503), ${b.failed} failed, p99 ${fmt(b.p99Ms, 0)} ms; worst gap ${secs(b.worstHeartbeatGapMs)} | ${verdict(b.failed === 0 && b.worstHeartbeatGapMs <= 6000)} |`,
    );
  }
  const c = d.churn;
  if (c) {
    out.push(
      `| churn | ${c.rounds} rounds of \`ensure-servers ${c.count}\` then \`0\`, beside a loop of \`ensure-servers ${c.other}\` then \`0\`: 0 NAPI NICs and 0 SAPI instances without a CN | ${c.napiNicsWithoutCn} NICs, ${c.sapiInstancesWithoutCn} instances without a CN (${fmt(c.seconds, 0)} s)${churnExits(c)} | ${verdict(c.napiNicsWithoutCn === 0 && c.sapiInstancesWithoutCn === 0)} |`,
    );
  }
  out.push('');
  return out;
}
