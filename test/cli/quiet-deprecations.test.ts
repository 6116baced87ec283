/**
 * The `mockcloud` entry point drops exactly one warning, DEP0111 (restify 11 loads spdy, whose
 * http-deceiver calls process.binding): loading restify after it prints nothing, and every
 * other warning, deprecations included, still reaches stderr as Node prints it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAIN } from './helpers/built-daemon.js';

const QUIET = path.join(path.dirname(MAIN), 'quiet-deprecations.js');

function node(script: string): { status: number | null; stderr: string } {
  if (!existsSync(QUIET)) throw new Error(`${QUIET} is missing: build first (npm run build)`);
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: path.dirname(path.dirname(path.dirname(MAIN))),
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
    timeout: 30_000,
  });
  return { status: r.status, stderr: r.stderr };
}

describe('quiet-deprecations (first import of the mockcloud entry point)', () => {
  it('without it, loading restify prints DEP0111 (the warning it exists for)', () => {
    const r = node(`import { createRequire } from 'node:module'; createRequire(import.meta.url)('restify');`);
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('[DEP0111]');
  });

  it('with it, restify loads silently and other warnings still show', () => {
    const r = node(
      [
        `await import(${JSON.stringify(pathToFileURL(QUIET).href)});`,
        `import { createRequire } from 'node:module';`,
        `createRequire(import.meta.url)('restify');`,
        `process.emitWarning('still shown', 'DeprecationWarning', 'DEP0999');`,
        `process.emitWarning('also shown', { type: 'ExperimentalWarning', code: 'X1' });`,
        `process.emitWarning('dropped', { type: 'DeprecationWarning', code: 'DEP0111' });`,
      ].join('\n'),
    );
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain('DEP0111');
    expect(r.stderr).not.toContain('dropped');
    expect(r.stderr).toContain('[DEP0999] DeprecationWarning: still shown');
    expect(r.stderr).toContain('ExperimentalWarning: also shown');
  });
});
