/**
 * The layering docs/architecture.md promises, checked on the source: arrows point down
 * (cli → scenarios / mirror → daemon → ui, metrics → events → agents, boot → runtime/headnode/mockcn
 * → vmadm, timing → common). A lower folder never imports a higher one, type-only imports included.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, root, sourceFiles, underSrc } from './source-imports.js';

const topOf = (rel: string): string => rel.split('/')[0]!;

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
    for (const file of sourceFiles()) {
      const from = topOf(underSrc(file));
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
});
