/**
 * Where the benchmark finds the compiled programs it starts (the daemon CLI and the sink) and
 * writes its outputs, from the project root, whether this module runs compiled (dist/) or
 * from source under vitest.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'tsconfig.json'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('cannot find the project root (package.json + tsconfig.json) above tools/bench');
}

export const PROJECT_ROOT = findRoot();
export const CLI_MAIN = path.join(PROJECT_ROOT, 'dist', 'src', 'cli', 'main.js');
export const SINK_MAIN = path.join(PROJECT_ROOT, 'dist', 'tools', 'bench', 'sink', 'main.js');
export const DEFAULT_JSON_OUT = path.join(PROJECT_ROOT, 'tools', 'bench', 'results', 'latest.json');
export const DEFAULT_DOC_OUT = path.join(PROJECT_ROOT, 'docs', 'performance.md');
/** The chart sits beside the document, named after it (performance.md → performance.svg). */
export function chartPathFor(docPath: string): string {
  return docPath.replace(/\.md$/i, '') + '.svg';
}

/**
 * The environment a bench runs the mockcloud CLI with: no mdata, and none of the caller's
 * MOCKCLOUD_* addresses, data dir or config file (the bench says each itself).
 */
export const CLI_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  MOCKCLOUD_NO_MDATA: '1',
  MOCKCLOUD_DATA_DIR: '',
  MOCKCLOUD_CNAPI_URL: '',
  MOCKCLOUD_VMAPI_URL: '',
  MOCKCLOUD_NAPI_URL: '',
  MOCKCLOUD_IMGAPI_URL: '',
  MOCKCLOUD_SAPI_URL: '',
  MOCKCLOUD_CONFIG: '',
};
