/**
 * Prometheus text exposition format 0.0.4, as cmon-agent writes it: per family a `# HELP` and a
 * `# TYPE` line, then its samples. Unlike the real agent (which interleaves the samples of
 * labelled families NIC by NIC), every family's samples are kept together, as the format asks.
 */

export type MetricType = 'counter' | 'gauge';

export interface Sample {
  /** Label pairs in output order. */
  labels?: readonly (readonly [string, string])[];
  value: number;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

export function formatFamilies(families: readonly MetricFamily[]): string {
  let out = '';
  for (const f of families) {
    out += `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n`;
    for (const s of f.samples) out += `${f.name}${formatLabels(s.labels)} ${formatValue(s.value)}\n`;
  }
  return out;
}

function formatLabels(labels: Sample['labels']): string {
  if (!labels || labels.length === 0) return '';
  return `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return Number.isInteger(v) ? v.toFixed(0) : String(v);
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** The three per-collector meta gauges the real MasterCollector adds (CMON-92). */
export function collectorMeta(collector: string, available: boolean, elapsedSeconds: number): MetricFamily[] {
  return [
    {
      name: `${collector}_metrics_available_boolean`,
      help: `Whether ${collector} metrics were available, 0 = false, 1 = true`,
      type: 'gauge',
      samples: [{ value: available ? 1 : 0 }],
    },
    {
      name: `${collector}_metrics_cached_boolean`,
      help: `Whether ${collector} metrics came from cache, 0 = false, 1 = true`,
      type: 'gauge',
      samples: [{ value: 0 }],
    },
    {
      name: `${collector}_metrics_timer_seconds`,
      help: `How long it took to gather the ${collector} metrics`,
      type: 'gauge',
      samples: [{ value: elapsedSeconds }],
    },
  ];
}
