/**
 * No import circles in src/: modules that import each other, directly or round a loop, are
 * one thing split over several files, and none of them can be read, tested or moved alone.
 * Type-only imports count (see source-imports.ts). A circle is reported with its files and
 * the imports that close it; break it by moving what both sides need below both.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles, src, underSrc } from './source-imports.js';

/** The module graph: each module of src/ and the modules of src/ it imports. */
function moduleGraph(): Map<string, string[]> {
  const files = sourceFiles();
  const known = new Set(files.map(underSrc));
  return new Map(files.map((f) => [underSrc(f), [...new Set(importsOf(f))].filter((t) => known.has(t))]));
}

/** The strongly connected components with more than one module, or one that imports itself (Tarjan). */
function circlesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return circles;
}

describe('import circles', () => {
  it('reads every kind of import, type-only ones included', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mockcloud-imports-'));
    try {
      const file = path.join(dir, 'm.ts');
      writeFileSync(
        file,
        [
          "import { a } from './a.js';",
          "import type { B } from './b.js';",
          'import {',
          '  c,',
          '  type C,',
          "} from '../c.js';",
          "export type { D } from './d.js';",
          "export * from './e.js';",
          "import './f.js';",
          "const g = await import('./g.js');",
          "import fs from 'node:fs';",
        ].join('\n'),
      );
      const rel = (name: string): string => underSrc(path.join(dir, name));
      expect(importsOf(file)).toEqual([rel('a.ts'), rel('b.ts'), rel('../c.ts'), rel('d.ts'), rel('e.ts'), rel('f.ts'), rel('g.ts')]);
      expect(underSrc(path.join(src, 'x/y.ts'))).toBe('x/y.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds a circle round a loop, and a module that imports itself', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    expect(circlesOf(graph)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
  });

  it('src/ has none', () => {
    const graph = moduleGraph();
    const report = circlesOf(graph).map((files) => {
      const inside = new Set(files);
      const ties = files.flatMap((f) => graph.get(f)!.filter((t) => inside.has(t)).map((t) => `${f} -> ${t}`));
      return `circle of ${files.length}: ${ties.join(', ')}`;
    });
    expect(report).toEqual([]);
  });
});
