/**
 * The live fleet page in a real browser: Debian's chromium (/usr/bin/chromium, installed by
 * .ci/run) driven by playwright-core, against the built daemon with its embedded dev headnode
 * and 20 CNs. The page shows one cell per CN (window.__fleet and the canvas pixels agree), a CN
 * taken offline with `mockcloud event offline` turns its cell red within seconds, clicking a
 * cell shows that CN's VMs, and the page's screenshot is saved to
 * test-artifacts/fleet-page.png. Without the browser this FAILS: it is not skipped.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postTask, startBuiltDaemon, until, type BuiltDaemon } from '../cli/helpers/built-daemon.js';
import { jsonLines, runCli } from '../cli/helpers/run-cli.js';
import { launchChromium } from './helpers/chromium.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const N = 20;

/** The RGB of a CN's cell on the canvas (a pixel inside it, off the heartbeat-age bar). */
async function cellPixel(page: Page, uuid: string): Promise<[number, number, number] | null> {
  return page.evaluate((u) => {
    const w = globalThis as unknown as PageGlobals;
    const cell = w.__fleet?.cell(u);
    if (!cell) return null;
    const canvas = w.document.getElementById('grid');
    const dpr = canvas.width / canvas.clientWidth;
    const d = canvas.getContext('2d').getImageData(Math.round((cell.rect.x + 2) * dpr), Math.round((cell.rect.y + 2) * dpr), 1, 1).data;
    return [d[0]!, d[1]!, d[2]!] as [number, number, number];
  }, uuid);
}

/** What the page offers tests (app.js `publish()`), seen from outside the browser's types. */
interface FleetView {
  connected: boolean;
  updates: number;
  cells: number;
  matching: number;
  states: Record<string, number>;
  colors: Record<string, string>;
  cell(uuid: string): { state: string; rect: { x: number; y: number; size: number } } | null;
}
/** The page's globals, typed here (the tests are compiled without the DOM's types). */
type PageGlobals = {
  __fleet?: FleetView;
  document: { getElementById(id: string): { width: number; clientWidth: number; getContext(k: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } } };
};

const hex = (h: string): [number, number, number] => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];

describe('the live fleet page in headless chromium', () => {
  let daemon: BuiltDaemon;
  let browser: { context: BrowserContext; close(): Promise<void> } | undefined;
  let url: string;
  let servers: { uuid: string; hostname: string; agentAddress: string }[];
  const dd = (): string[] => ['--data-dir', daemon.dataDir];

  beforeAll(async () => {
    daemon = await startBuiltDaemon({ servers: N, config: { timings: { heartbeatIntervalMs: 1000, statusThrottleMs: 200, startSpreadMs: 200 } } });
    expect((await runCli(['--help'])).stdout).toMatch(/mockcloud ui\b/);
    const printed = await runCli(['ui', ...dd()]);
    expect(printed.code, printed.stderr).toBe(0);
    url = printed.stdout.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const list = jsonLines<typeof servers[number] & { headnode: boolean }>((await runCli(['list-servers', '-j', ...dd()])).stdout);
    servers = list.filter((s) => !s.headnode);
    expect(servers).toHaveLength(N);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.stop();
  }, 30_000);

  it('shows every CN, turns an offline one red, shows a clicked CN\'s VMs, and saves a screenshot', async () => {
    // In the test, not in a hook: a missing browser fails this test (a failed hook would count it skipped).
    browser = await launchChromium();
    const vmCn = servers[3]!;
    const vm = randomUUID();
    const created = await postTask(`http://${vmCn.agentAddress}`, vmCn.uuid, 'machine_create', {
      uuid: vm,
      brand: 'joyent-minimal',
      alias: 'page-test',
      owner_uuid: '930896af-bf8c-48d4-885c-6573a94b1853',
      ram: 256,
      max_physical_memory: 256,
      quota: 10,
      nics: [],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);

    const page = await browser!.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(url);
    // N cells, every one running (heartbeats every second here: late after 3 s).
    await page.waitForFunction(
      (n) => {
        const f = (globalThis as unknown as PageGlobals).__fleet;
        return f?.connected && f.cells === n && f.states.running === n;
      },
      N,
      { timeout: 10_000 },
    );
    expect(await page.locator('#grid').getAttribute('data-cells')).toBe(String(N));
    const colors = await page.evaluate(() => (globalThis as unknown as PageGlobals).__fleet!.colors);
    const target = servers[0]!;
    const running = JSON.stringify(hex(colors.running!));
    await until(async () => JSON.stringify(await cellPixel(page, target.uuid)) === running, 5_000, 'the running colour on the canvas', 100);

    const ev = await runCli(['event', 'offline', '--servers', target.uuid, '--duration', '1m', ...dd()]);
    expect(ev.code, ev.stderr).toBe(0);
    await until(async () => JSON.stringify(await cellPixel(page, target.uuid)) === JSON.stringify(hex(colors.offline!)), 5_000, 'the offline CN\'s cell to turn red', 100);
    // Its neighbour is not taken with it (running, or late on a busy machine: not red).
    expect(await cellPixel(page, servers[1]!.uuid)).not.toEqual(hex(colors.offline!));

    // Search by hostname, then filter by state: the toolbar and __fleet say what matches.
    const matching = (): Promise<number> => page.evaluate(() => (globalThis as unknown as PageGlobals).__fleet!.matching);
    await page.fill('#search', target.hostname.toLowerCase());
    expect(await matching()).toBe(1);
    expect(await page.locator('#matches').textContent()).toBe(`1 of ${N} match`);
    await page.fill('#search', '');
    await page.selectOption('#f-state', 'offline');
    expect(await matching()).toBe(1);
    await page.selectOption('#f-state', '');
    expect(await matching()).toBe(N);

    // Click the CN holding the VM: its VMs, with the VM's state.
    const rect = await page.evaluate((u) => (globalThis as unknown as PageGlobals).__fleet!.cell(u)!.rect, vmCn.uuid);
    const box = (await page.locator('#grid').boundingBox())!;
    await page.mouse.click(box.x + rect.x + rect.size / 2, box.y + rect.y + rect.size / 2);
    const row = page.locator(`#vms tr[data-vm="${vm}"]`);
    await row.waitFor({ timeout: 5_000 });
    expect(await row.locator('.vm-state').textContent()).toBe('running');
    expect(await page.locator('#panel h2').textContent()).toContain(vmCn.hostname);
    expect(await page.locator('#panel').textContent()).toContain('machine_create');
    // config-agent's and firewaller's view of the CN: the embedded headnode has a SAPI and an FWAPI.
    expect(await page.locator('#agent-facts').textContent()).toMatch(/^config from SAPI: (\d+s old|not checked yet) · firewall: \d+ rules, \d+ remote VMs$/);

    // The panel's Crash button: a vm-crash event through the page's listener; the VM stops.
    await row.locator(`button[data-crash="${vm}"]`).click();
    await until(async () => (await page.locator(`#vms tr[data-vm="${vm}"] .vm-state`).textContent()) !== 'running', 5_000, 'the crashed VM to stop', 100);
    const log = (await fsp.readFile(path.join(daemon.dataDir, 'events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { type: string; vms?: string[] });
    expect(log.some((r) => r.type === 'vm-crash' && r.vms?.includes(vm))).toBe(true);

    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = path.join(ARTIFACTS, 'fleet-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect((await fsp.stat(shot)).size).toBeGreaterThan(10_000);
    expect(problems).toEqual([]);
  }, 40_000);

  it('refuses event requests from another origin and foreign Host names', async () => {
    const body = JSON.stringify({ type: 'reboot', target: { servers: [servers[5]!.uuid] } });
    const foreign = await fetch(`${url}api/events`, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://evil.example' }, body });
    expect(foreign.status).toBe(403);
    const form = await fetch(`${url}api/events`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
    expect(form.status).toBe(415);
    // A bad event: the control API's own answer, word for word.
    const meteor = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'meteor', target: { all: true } }) };
    const bad = await fetch(`${url}api/events`, meteor);
    const control = JSON.parse(await fsp.readFile(path.join(daemon.dataDir, 'daemon.json'), 'utf8')) as { control: { url: string } };
    const same = await fetch(`${control.control.url}/events`, meteor);
    expect(bad.status).toBe(same.status);
    expect(await bad.json()).toEqual(await same.json());
    // A path that is not valid percent-encoding is the client's error, as on the control API.
    const garbled = await fetch(`${url}api/servers/%zz`);
    expect(garbled.status).toBe(400);
    expect(await garbled.json()).toMatchObject({ code: 'BadRequest' });
    // http.request keeps the Host header we give (fetch would not).
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const u = new URL(url);
      const req = request({ host: u.hostname, port: u.port, path: '/', headers: { host: 'rebound.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });
});
