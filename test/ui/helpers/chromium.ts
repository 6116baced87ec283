/** Debian's chromium for the fleet page's tests, driven by playwright-core. */
import { existsSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Chromium as CI runs it: headless, no sandbox (root), nothing from the network, a fresh profile. */
export async function launchChromium(opts: { timezoneId?: string } = {}): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does)`);
  const profile = await fsp.mkdtemp(path.join(os.tmpdir(), 'mockcloud-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => undefined);
      await fsp.rm(profile, { recursive: true, force: true });
    },
  };
}
