/**
 * The entry of the mock global-zone commands: `node main.js <snapshot.json> <command>
 * [args...]`, run by the one-line wrappers gz-scripts/gz-snapshot.ts writes for one script run. It
 * reads the CN's snapshot, answers like the SmartOS command of that name (run.ts) and exits
 * with that command's status. Nothing lives on: each call reads the file and ends.
 */
import { readFileSync } from 'node:fs';
import { runGzCommand } from './run.js';
import type { GzSnapshot } from './types.js';

function main(argv: string[]): void {
  const [file, command, ...args] = argv;
  if (file === undefined || command === undefined) {
    process.stderr.write('usage: main.js <snapshot.json> <command> [args...]\n');
    process.exitCode = 2;
    return;
  }
  let snapshot: GzSnapshot;
  try {
    snapshot = JSON.parse(readFileSync(file, 'utf8')) as GzSnapshot;
  } catch (err) {
    process.stderr.write(`${command}: cannot read the CN's state: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  const result = runGzCommand(snapshot, command, args);
  process.stderr.write(result.stderr);
  process.exitCode = result.code;
  // A reader that went away (`vmadm list | head -1`) is no error, as for the real commands.
  process.stdout.on('error', () => undefined);
  process.stdout.write(result.stdout);
}

main(process.argv.slice(2));
