/**
 * The source tree as the architecture tests read it: every module of src/ and the relative
 * imports of each, resolved to paths under src/ ('daemon/config.ts'). An import is any
 * `import ... from`, `import type ... from`, `export ... from`, side-effect `import '...'` or
 * `import('...')`: a type-only import ties two modules as much as any other (the compiler
 * drops it from the output, but a reader still has to hold both files to understand either).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const src = path.join(root, 'src');

/** Every module (.ts, and the page's plain .js) under `dir`, as absolute paths. */
export function sourceFiles(dir: string = src): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|js)$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** A module's path under src/, e.g. 'agents/cn-agent/types.ts'. */
export const underSrc = (file: string): string => path.relative(src, file).split(path.sep).join('/');

const STATIC_RE = /(?:^|\n)\s*(?:import|export)\s+(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/g;
const DYNAMIC_RE = /import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The relative imports of a module, resolved to paths under src/ ('.js' read as the '.ts' beside it). */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(STATIC_RE), ...text.matchAll(DYNAMIC_RE)].map((m) => m[1]!);
  const isTs = file.endsWith('.ts');
  return specs
    .filter((s) => s.startsWith('.'))
    .map((s) => underSrc(path.resolve(path.dirname(file), isTs ? s.replace(/\.js$/, '.ts') : s)));
}
