/**
 * A small, strict parser of the Prometheus text exposition format 0.0.4, for counter and gauge
 * families (all cmon-agent emits). It rejects what a scraper could choke on: malformed lines,
 * a sample before its family's TYPE, a family whose samples are not contiguous, a sample whose
 * name is not its family's, duplicate HELP/TYPE or series, bad label syntax or escapes, values
 * that are not numbers, and a body that does not end in a newline.
 */

export interface ParsedSample {
  labels: Record<string, string>;
  value: number;
}

export interface ParsedFamily {
  name: string;
  help?: string;
  type: 'counter' | 'gauge';
  samples: ParsedSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function parsePrometheus(text: string): Map<string, ParsedFamily> {
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const families = new Map<string, ParsedFamily>();
  const helps = new Map<string, string>();
  const closed = new Set<string>();
  const series = new Set<string>();
  let current: string | undefined;
  const lines = text.split('\n');
  lines.pop();
  lines.forEach((line, i) => {
    const where = `line ${i + 1} ${JSON.stringify(line)}`;
    if (line === '') throw new Error(`${where}: empty line`);
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) throw new Error(`${where}: only HELP and TYPE comments are expected`);
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name`);
      if (closed.has(name) || (current !== undefined && current !== name && families.get(name))) {
        throw new Error(`${where}: family ${name} reopened`);
      }
      if (current !== name && current !== undefined) closed.add(current);
      current = name;
      if (kind === 'HELP') {
        if (helps.has(name)) throw new Error(`${where}: second HELP`);
        helps.set(name, unescapeHelp(rest));
      } else {
        if (families.has(name)) throw new Error(`${where}: second TYPE`);
        if (rest !== 'counter' && rest !== 'gauge') throw new Error(`${where}: unexpected type ${rest}`);
        families.set(name, { name, type: rest, samples: [] });
      }
      return;
    }
    const { name, labels, value } = parseSample(line, where);
    const fam = families.get(name);
    if (!fam) throw new Error(`${where}: sample without a TYPE for ${name}`);
    if (current !== name) throw new Error(`${where}: samples of ${name} are not contiguous`);
    const key = `${name}{${Object.entries(labels).sort().map(([k, v]) => `${k}=${v}`).join(',')}}`;
    if (series.has(key)) throw new Error(`${where}: duplicate series ${key}`);
    series.add(key);
    fam.samples.push({ labels, value });
  });
  for (const [name, help] of helps) {
    const fam = families.get(name);
    if (!fam) throw new Error(`HELP for ${name} without a TYPE`);
    fam.help = help;
  }
  return families;
}

function parseSample(line: string, where: string): { name: string; labels: Record<string, string>; value: number } {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$/.exec(line);
  if (!m) throw new Error(`${where}: not a sample line`);
  const labels: Record<string, string> = {};
  if (m[2]) {
    let rest = m[2].slice(1, -1);
    while (rest.length > 0) {
      const lm = /^([^=]+)="((?:[^"\\]|\\.)*)"(,|$)/.exec(rest);
      if (!lm) throw new Error(`${where}: bad labels`);
      const [all, lname, raw] = lm as unknown as [string, string, string];
      if (!LABEL_NAME.test(lname)) throw new Error(`${where}: bad label name ${lname}`);
      if (lname in labels) throw new Error(`${where}: duplicate label ${lname}`);
      if (/\\[^\\"n]/.test(raw)) throw new Error(`${where}: bad escape in label ${lname}`);
      labels[lname] = raw.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      rest = rest.slice(all.length);
    }
  }
  const v = m[3]!;
  let value: number;
  if (v === 'NaN') value = NaN;
  else if (v === '+Inf') value = Infinity;
  else if (v === '-Inf') value = -Infinity;
  else if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) value = Number(v);
  else throw new Error(`${where}: bad value ${v}`);
  return { name: m[1]!, labels, value };
}

function unescapeHelp(s: string): string {
  return s.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** The value of the one unlabelled sample of a family (fails when absent). */
export function single(families: Map<string, ParsedFamily>, name: string): number {
  const fam = families.get(name);
  if (!fam || fam.samples.length !== 1) throw new Error(`expected exactly one sample of ${name}`);
  return fam.samples[0]!.value;
}
