/**
 * The layering docs/architecture.md promises, checked on the source: arrows point down
 * (cli → scenarios / mirror → daemon → ui, metrics → events → agents, boot → runtime/headnode/mockcn
 * → vmadm → common). A lower folder never imports a higher one, type-only imports included.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, root, sourceFiles, underSrc } from './source-imports.js';

const topOf = (rel: string): string => rel.split('/')[0]!;

/** What each folder of src/ may import from (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  common: [],
  vmadm: ['common'],
  mockcn: ['common', 'vmadm'],
  runtime: ['common', 'mockcn'],
  headnode: ['common', 'vmadm', 'mockcn'],
  agents: ['common', 'vmadm', 'mockcn', 'runtime'],
  boot: ['common', 'vmadm', 'mockcn', 'runtime'],
  events: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot'],
  metrics: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'events'],
  ui: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events'],
  daemon: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui'],
  scenarios: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui', 'daemon'],
  mirror: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui', 'daemon'],
  cli: ['common', 'vmadm', 'mockcn', 'runtime', 'agents', 'boot', 'headnode', 'events', 'metrics', 'ui', 'daemon', 'scenarios', 'mirror'],
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
