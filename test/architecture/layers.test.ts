/**
 * The layering docs/architecture.md promises, checked on the source: arrows point down
 * (cli → scenarios / mirror → daemon → ui, metrics → events → agents, boot → runtime/headnode/mockcn → vmadm, timing → common), and cn-agent keeps one
 * file per task, named after the task (sdc-cn-agent lib/backends/smartos/tasks/<task>.js).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TASKS } from '../../src/agents/cn-agent/tasks/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const src = path.join(root, 'src');

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every relative import of a file, resolved to a path under src/ (e.g. 'daemon/config.ts'). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?:[^'";]*?\sfrom\s+)?'([^']+)'/g)].map((m) => m[1]!);
  specs.push(...[...text.matchAll(/import\(\s*'([^']+)'\s*\)/g)].map((m) => m[1]!));
  return specs
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(src, path.resolve(path.dirname(file), s)).replace(/\.js$/, '.ts'));
}

const topOf = (rel: string): string => rel.split(path.sep)[0]!;

/** What each folder of src/ may import from (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  common: [],
  timing: ['common'],
  vmadm: ['common'],
  mockcn: ['common', 'vmadm', 'timing'],
  runtime: ['common', 'mockcn', 'timing'],
  headnode: ['common', 'vmadm', 'mockcn', 'timing'],
  agents: ['common', 'vmadm', 'mockcn', 'runtime', 'timing'],
  boot: ['common', 'vmadm', 'mockcn', 'runtime', 'timing'],
  events: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'timing'],
  metrics: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'events', 'timing'],
  ui: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'timing'],
  daemon: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui', 'timing'],
  scenarios: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui', 'daemon', 'timing'],
  mirror: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui', 'daemon', 'timing'],
  cli: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui', 'daemon', 'scenarios', 'mirror', 'timing'],
};

describe('source layering', () => {
  it('every folder of src/ imports only from the folders below it', () => {
    const violations: string[] = [];
    for (const file of tsFiles(src)) {
      const from = topOf(path.relative(src, file));
      const allowed = ALLOWED[from];
      if (!allowed) {
        violations.push(`${path.relative(root, file)}: folder src/${from} is not in the layering table`);
        continue;
      }
      for (const target of importsOf(file)) {
        const to = topOf(target);
        if (to !== from && !allowed.includes(to)) violations.push(`${path.relative(root, file)} imports src/${target}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('cn-agent keeps each task in a file named after it, and registers each name once', () => {
    const dir = path.join(src, 'agents/cn-agent/tasks');
    const names = TASKS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      const text = readFileSync(path.join(dir, `${name}.ts`), 'utf8');
      expect(text, `${name}.ts defines the task`).toContain(`name: '${name}'`);
    }
    const taskFiles = readdirSync(dir).filter((f) => /^[a-z0-9]+(_[a-z0-9]+)+\.ts$|^nop\.ts$|^sleep\.ts$/.test(f));
    expect(taskFiles.map((f) => f.replace(/\.ts$/, '')).sort()).toEqual([...names].sort());
  });
});
