/**
 * The daemon's events as scenario tests read them: its control API (where /events lives) and
 * its event log, `<data-dir>/events.jsonl` (one JSON line per start, end and mark).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';

export interface EventsAccess {
  /** The CLI's --data-dir: the daemon's own. */
  cliDataDir: string;
  /** The daemon's control API. */
  controlUrl: string;
  /** The event log. */
  eventLog: string;
  close(): Promise<void>;
}

/** The events of the daemon whose data dir is `dataDir`. */
export async function eventsAccess(dataDir: string): Promise<EventsAccess> {
  const daemonJson = JSON.parse(await fsp.readFile(path.join(dataDir, 'daemon.json'), 'utf8')) as { control: { url: string } };
  return { cliDataDir: dataDir, controlUrl: daemonJson.control.url, eventLog: path.join(dataDir, 'events.jsonl'), close: async () => {} };
}

/** The event log's lines, parsed; none when it does not exist yet. */
export async function readEventLog(file: string): Promise<Record<string, any>[]> {
  const text = await fsp.readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, any>);
}
