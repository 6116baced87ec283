/**
 * `mockcloud timing [NAME|FILE]`: the running daemon's timing (GET /timing), or a new one
 * (PUT /timing: a built-in profile's name, or a timing file, read here and sent as its text
 * so its problems name its lines). A bad timing is refused and the daemon keeps its own.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { BUILTIN_PROFILES } from '../timing/builtin.js';
import { clientDataDir, findDaemon, UsageError } from './daemon-client.js';
import { withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface TimingArgs extends DataDirArgs, JsonArgs {
  timing?: string;
}

interface TimingView {
  profile: { name: string; description: string; source: string; figures: Record<string, string> };
  adjustments: Record<string, unknown>[];
}

async function handler(argv: TimingArgs): Promise<void> {
  const daemon = await findDaemon(clientDataDir(argv['data-dir']));
  let answer: TimingView;
  if (argv.timing === undefined) answer = await daemon.call<TimingView>('GET', '/timing');
  else if (BUILTIN_PROFILES.has(argv.timing)) answer = await daemon.call<TimingView>('PUT', '/timing', { name: argv.timing });
  else {
    const file = path.resolve(argv.timing);
    const yaml = await fsp.readFile(file, 'utf8').catch((err: Error) => {
      throw new UsageError(`${argv.timing} is no built-in timing profile (${[...BUILTIN_PROFILES.keys()].join(', ')}) and cannot be read: ${err.message}`);
    });
    answer = await daemon.call<TimingView>('PUT', '/timing', { yaml, name: path.basename(file).replace(/\.(ya?ml|json)$/i, '') });
  }
  if (argv.json) {
    process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return;
  }
  const p = answer.profile;
  const lines = [`timing: ${p.name} (${p.source}): ${p.description}`];
  for (const [key, f] of Object.entries(p.figures)) lines.push(`  ${key.padEnd(44)} ${f}`);
  for (const a of answer.adjustments) lines.push(`  adjusted for a while: ${JSON.stringify(a)}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

export const timingCommand: CommandModule<object, TimingArgs> = {
  command: 'timing [timing]',
  describe: "Show the running daemon's timing (how long tasks, VM changes, boots and jobs take), or set it: a built-in name or a timing file",
  builder: (y: Argv) =>
    withJson(
      withDataDir(
        y
          .positional('timing', { type: 'string', describe: `${[...BUILTIN_PROFILES.keys()].join(', ')}, or a timing file (docs/timing.md)` })
          .example('$0 timing', 'the timing in force and its figures')
          .example('$0 timing smartos', 'time like a real SmartOS CN and Triton DC')
          .example('$0 timing ./slow-dc.yaml', 'your own figures (refused, with their lines, if bad)'),
      ),
      'the timing',
    ) as Argv<TimingArgs>,
  handler,
};
