/**
 * `mockcloud ui [-j]`: the URL of the running daemon's live fleet web page (docs/ui.md), read
 * from its daemon.json as the other commands find the daemon. Open it in a browser.
 */
import type { Argv, CommandModule } from 'yargs';
import { CliError, daemonFor } from './daemon-client.js';
import { jsonLine, withDataDir, withJson, type DataDirArgs, type JsonArgs } from './options.js';

interface UiArgs extends DataDirArgs, JsonArgs {}

function builder(y: Argv): Argv<UiArgs> {
  return withJson(withDataDir(y), 'the address ({ip, port, url})').epilog(
    'The daemon serves the page on 127.0.0.1 (any free port) unless started with --ui-address IP[:PORT] ' +
      '(or none for no page). The page needs no build step and nothing from the Internet.',
  ) as Argv<UiArgs>;
}

async function handler(argv: UiArgs): Promise<void> {
  const daemon = await daemonFor(argv);
  const ui = daemon.info.ui;
  if (!ui) throw new CliError(`the mockcloud daemon for ${daemon.info.dataDir} (pid ${daemon.info.pid}) serves no fleet page (started with --ui-address none?)`);
  process.stdout.write(argv.json ? jsonLine(ui) : `${ui.url}\n`);
}

export const uiCommand: CommandModule<object, UiArgs> = {
  command: 'ui',
  describe: "Print the URL of the daemon's live fleet web page (every CN, its state, tasks and events)",
  builder,
  handler,
};
