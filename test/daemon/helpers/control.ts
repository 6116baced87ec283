/** The daemon's control API as the CLI calls it, for tests. */
import { expect } from 'vitest';
import type { Daemon } from '../../../src/daemon/daemon.js';

/** create-servers (`POST /servers` with `{count, ...}`): the new CNs' uuids. */
export async function createServers(daemon: Daemon, body: { count: number } & Record<string, unknown>): Promise<string[]> {
  const res = await fetch(`${daemon.controlAddress.url}/servers`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { created: { uuid: string }[] }).created.map((c) => c.uuid);
}
